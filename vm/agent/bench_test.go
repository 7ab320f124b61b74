package agent

import (
	"context"
	"testing"

	"github.com/obelisk-plan/obelisk/toolkit/llm"
	"github.com/obelisk-plan/obelisk/toolkit/llm/llmtest"
)

// BenchmarkEagerTurn measures one goal of one eager turn against a fake
// OpenAI-compatible server on loopback: the request, the streamed answer
// (three steps and an output, in small pieces), the runs, the summary.
// It is the agent's own overhead, without a model's latency.
func BenchmarkEagerTurn(b *testing.B) {
	pieces := []string{"fetch: lookup(id: ", "†input.id) -> †state.customer\n", "sc: score(orders: †state.customer.orders)",
		" -> †state.score\n", "tell: notify(name: †state.customer.name, score: †state.score) -> †state.sent\n", "output {sent: †state.sent.sent}\n"}
	srv := llmtest.NewOpenAI(func(*llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Pieces: pieces, Usage: llm.Usage{Input: 1, Output: 1}}
	})
	defer srv.Close()
	c, cfg := testContext(b, customerTools, map[string]any{"id": "c-1"})
	planner := fakeProviders[0].open(srv.Settings("planner", "judge"))
	ts := customerToolbox(&journal{})
	b.ResetTimer()
	for range b.N {
		res, err := Run(context.Background(), Options{Goal: "Score c-1 and tell them.", Context: c, Check: cfg, Tools: ts, Planner: planner})
		if err != nil || res.Status != GoalCompleted {
			b.Fatalf("%v %v", err, res.Err)
		}
	}
}
