package knowledge

// SupportSynonyms are groups of words a customer and a help page commonly
// use for the same thing ("delivery" where the page says "shipping",
// "laptop" where it says "computer"). WordNet, which retrieval's synonym
// table is built from, does not link most of them: it knows the senses of
// general English, not the vocabulary of support. Both retrieval (its
// synonym table puts them before WordNet's) and the embedded model read
// them from here, so a question is understood the same way by the part
// that finds the passages and the part that quotes them. Kept small and
// domain-neutral on purpose: a wrong synonym costs more than a missing one.
var SupportSynonyms = []string{
	"ship shipping shipment deliver delivery dispatch courier",
	"package parcel",
	"cost price pricing fee charge",
	"refund reimburse reimbursement money",
	"contact reach",
	"hour open opening available availability",
	"cancel cancellation",
	"warranty guarantee",
	"buy purchase",
	"discount coupon promo voucher cheap cheaper",
	"change modify update edit",
	"remove delete revoke disconnect kick",
	"enable activate",
	"disable deactivate",
	"fast express quick rush",
	"international abroad worldwide overseas",
	"damaged broken defect defective faulty",
	"invoice receipt",
	"subscription membership",
	"support assistance",
	"limit cap maximum",
	"minimum least",
	"length long",
	"pay paid payment",
	"computer laptop machine pc device",
	"company organization business enterprise",
	"employee staff member",
	"require requirement force enforce mandatory compulsory",
	"admin administrator",
}
