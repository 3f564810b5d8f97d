package local_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/conciergehq/concierge/adapters/llm/local"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

func ExampleModel_Complete() {
	model := local.New(local.Options{})
	req := ports.CompletionRequest{
		System:   "You are Acme Support, a customer support assistant.",
		Messages: []ports.LLMMessage{{Role: "user", Content: "How long does delivery take?"}},
		Knowledge: []domain.Chunk{{
			ID: "chk_1", DocumentName: "Shipping policy",
			Text: "We ship to the United States and Canada. Standard shipping takes 3–5 business days. " +
				"Shipping is free on orders over $50.",
		}},
	}
	var tokens []string
	comp, err := model.Complete(context.Background(), req, func(delta string) error {
		tokens = append(tokens, delta)
		return nil
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(comp.Content)
	fmt.Println(comp.Cited)
	fmt.Printf("%q\n", strings.Join(tokens, "|"))
	// Output:
	// Standard shipping takes 3–5 business days.
	// [chk_1]
	// "Standard |shipping |takes |3–5 |business |days."
}
