package domain

import (
	"fmt"
	"strings"
)

// Plan is a workspace's subscription plan.
type Plan string

// The plans, from smallest to largest.
const (
	PlanFree       Plan = "free"
	PlanHobby      Plan = "hobby"
	PlanStandard   Plan = "standard"
	PlanEnterprise Plan = "enterprise"
)

// Plans lists every plan in ascending order.
var Plans = []Plan{PlanFree, PlanHobby, PlanStandard, PlanEnterprise}

// ParsePlan accepts a plan name in any letter case.
func ParsePlan(s string) (Plan, error) {
	p := Plan(strings.ToLower(strings.TrimSpace(s)))
	for _, known := range Plans {
		if p == known {
			return p, nil
		}
	}
	return "", Invalid("unknown plan %q; use one of free, hobby, standard, enterprise", s)
}

func (p Plan) rank() int {
	for i, known := range Plans {
		if p == known {
			return i
		}
	}
	return -1
}

// Feature is a capability that plans grant.
type Feature string

// Features named by PRODUCT.md.
const (
	FeatureWidget               Feature = "widget"
	FeatureAPIAccess            Feature = "apiAccess"
	FeatureToolCalling          Feature = "toolCalling"
	FeatureHandoff              Feature = "handoff"
	FeatureIdentityVerification Feature = "identityVerification"
	FeatureWhiteLabel           Feature = "whiteLabel"
)

// planFeatures is the one table of which plan includes which feature. Features
// sold as add-ons below Enterprise are listed in addonFeatures.
var planFeatures = map[Feature]Plan{
	FeatureWidget:               PlanFree,
	FeatureAPIAccess:            PlanStandard,
	FeatureToolCalling:          PlanStandard,
	FeatureHandoff:              PlanStandard,
	FeatureIdentityVerification: PlanEnterprise,
	FeatureWhiteLabel:           PlanEnterprise,
}

// addonFeatures can be bought separately on plans that do not include them.
var addonFeatures = map[Feature]bool{
	FeatureIdentityVerification: true,
	FeatureWhiteLabel:           true,
}

// MinimumPlanFor returns the smallest plan that includes f.
func MinimumPlanFor(f Feature) Plan {
	if p, ok := planFeatures[f]; ok {
		return p
	}
	return PlanEnterprise
}

// Includes reports whether the plan itself includes f (add-ons aside).
func (p Plan) Includes(f Feature) bool {
	minimum, ok := planFeatures[f]
	return ok && p.rank() >= minimum.rank()
}

// ParseAddon accepts the name of a feature that can be bought as an add-on.
func ParseAddon(s string) (Feature, error) {
	for f := range addonFeatures {
		if strings.EqualFold(string(f), strings.TrimSpace(s)) {
			return f, nil
		}
	}
	return "", Invalid("unknown add-on %q; use identityVerification or whiteLabel", s)
}

// String returns the plan name.
func (p Plan) String() string { return string(p) }

// Title returns the plan name as products show it ("Standard").
func (p Plan) Title() string {
	if p == "" {
		return ""
	}
	return strings.ToUpper(string(p[:1])) + string(p[1:])
}

var _ fmt.Stringer = Plan("")
