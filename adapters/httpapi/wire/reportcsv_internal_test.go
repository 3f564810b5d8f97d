package wire

import (
	"testing"

	"github.com/conciergehq/concierge/core/domain"
)

func TestUsageTotals(t *testing.T) {
	usd := func(model string, prompt, completion, micros int64) domain.UsageFigure {
		return domain.UsageFigure{Model: model, PromptTokens: prompt, CompletionTokens: completion, CostMicros: micros, CostCurrency: "USD"}
	}
	tests := []struct {
		name                               string
		usage                              []domain.UsageFigure
		prompt, completion, cost, currency string
	}{
		{"none", nil, "0", "0", "", ""},
		{"priced in one currency", []domain.UsageFigure{usd("a", 1000, 100, 150), usd("b", 10, 1, 1_250_000)}, "1010", "101", "1.250150", "USD"},
		{"a model without a price", []domain.UsageFigure{usd("a", 1000, 100, 150), {Model: "local", PromptTokens: 5, CostMicros: -1}}, "1005", "100", "", ""},
		{"two currencies", []domain.UsageFigure{usd("a", 1, 1, 10), {Model: "b", PromptTokens: 1, CostMicros: 10, CostCurrency: "EUR"}}, "2", "1", "", ""},
		{"a currency a spreadsheet would run", []domain.UsageFigure{{Model: "a", CostMicros: 1, CostCurrency: "=X"}}, "0", "0", "0.000001", "'=X"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, c, cost, cur := usageTotals(tt.usage)
			if p != tt.prompt || c != tt.completion || cost != tt.cost || cur != tt.currency {
				t.Errorf("usageTotals = %q %q %q %q, want %q %q %q %q", p, c, cost, cur, tt.prompt, tt.completion, tt.cost, tt.currency)
			}
		})
	}
}
