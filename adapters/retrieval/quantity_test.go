package retrieval

import "testing"

func TestAskedKind(t *testing.T) {
	tests := []struct {
		question string
		want     quantityKind
	}{
		{"How much does Docker Scout cost?", moneyQuantity},
		{"What is the price per GB of extra storage?", moneyQuantity},
		{"What's the maximum file size I can upload?", sizeQuantity},
		{"How much storage space do I get?", sizeQuantity},
		{"How long is the verification link valid?", durationQuantity},
		{"How many recovery codes do I get?", anyQuantity},
		{"How many workspaces can I have?", anyQuantity},
		{"How much feedback can I give?", anyQuantity},
		{"What are the costs of extra seats?", moneyQuantity},
		{"How much is express delivery?", moneyQuantity},
		{"how much's the pro plan", moneyQuantity},
		{"And how much are the extra seats?", moneyQuantity},
		{"How much is the upload limit?", anyQuantity},
		{"How much is the storage on the free plan?", sizeQuantity},
		{"How much RAM does it use?", anyQuantity},
		{"How much data is left on my plan?", anyQuantity},
		{"", anyQuantity},
		{"the and of it", anyQuantity},
		{"配送料はいくらですか", anyQuantity},
	}
	for _, tt := range tests {
		t.Run(tt.question, func(t *testing.T) {
			if got := askedKind(tt.question); got != tt.want {
				t.Errorf("askedKind = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestHoldsQuantity(t *testing.T) {
	tests := []struct {
		name string
		text string
		kind quantityKind
		want bool
	}{
		{"currency sign", "Scout Business costs $9 per user.", moneyQuantity, true},
		{"currency after a number", "Express delivery costs 9.50 GBP.", moneyQuantity, true},
		{"euro sign glued", "Ab €4,99 im Monat.", moneyQuantity, true},
		{"a port is no price", "Allow outbound traffic to port 443 and 5000.", moneyQuantity, false},
		{"a size with a unit", "Files up to 100 MB can be uploaded.", sizeQuantity, true},
		{"a size glued to its unit", "Each layer is limited to 10gb.", sizeQuantity, true},
		{"a duration is no size", "Links expire after 30 days.", sizeQuantity, false},
		{"a duration", "Links expire after 30 days.", durationQuantity, true},
		{"a unit two words after", "Standard shipping takes 3 to 5 business days.", durationQuantity, true},
		{"a number written out", "Every telescope carries a seven year warranty.", durationQuantity, true},
		{"a unit three words after is too far", "Pick 3 of the available days.", durationQuantity, false},
		{"a duration unit without a number", "Links expire after some days.", durationQuantity, false},
		{"a version is no duration", "Upgrade to version 4.2 of the app.", durationQuantity, false},
		{"empty text", "", moneyQuantity, false},
		{"non-Latin text", "料金は月額500円です", moneyQuantity, false},
		{"a yen sign", "料金は ¥500 です", moneyQuantity, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := holdsQuantity(tt.text, tt.kind); got != tt.want {
				t.Errorf("holdsQuantity(%q, %v) = %v, want %v", tt.text, tt.kind, got, tt.want)
			}
		})
	}
}
