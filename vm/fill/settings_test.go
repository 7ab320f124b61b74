package fill_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/obelisk-plan/obelisk/toolkit/llm"
	"github.com/obelisk-plan/obelisk/vm/fill"
)

func envOf(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

const noHolePlan = `tool checkBillingHistory(customerId: string) -> {orders: int, refundable: number} pure

input {
  customerId: string
}

history: checkBillingHistory(customerId: †input.customerId) -> †state.history

output †state.history.orders
`

// TestSettingsFiller: a fills file fills whatever the plan is; a model is
// opened only when the plan leaves something to it, and its absence is an
// error that names the steps and how to give one.
func TestSettingsFiller(t *testing.T) {
	holes, none := compile(t, refundPlan), compile(t, noHolePlan)
	noModel, model := envOf(nil), envOf(map[string]string{"OPENAI_API_KEY": "k", "OBELISK_MODEL": "m1"})

	f, err := fill.Settings{Fills: `{"refund": {"amount": 12}}`, FillsFile: "x.fills.json"}.Filler(holes, noModel)
	if _, ok := f.(*fill.Script); !ok || err != nil {
		t.Errorf("fills file: %T %v", f, err)
	}
	if _, err := (fill.Settings{Fills: `{"refund": 1, "refund": 2}`, FillsFile: "x.fills.json"}).Filler(none, noModel); err == nil || !strings.HasPrefix(err.Error(), "x.fills.json: ") {
		t.Errorf("a bad fills file: %v", err)
	}
	if f, err := (fill.Settings{}).Filler(none, noModel); f != nil || err != nil {
		t.Errorf("nothing to fill: %v %v", f, err)
	}
	_, err = fill.Settings{}.Filler(holes, noModel)
	if err == nil || !errors.Is(err, llm.ErrNoProvider) ||
		!strings.HasPrefix(err.Error(), "step refund has something left for a model to complete when it runs, and no model is configured: give a fills file (fill.Settings.Fills), or a model.\n") {
		t.Errorf("no model: %v", err)
	}
	f, err = fill.Settings{Timeout: time.Second}.Filler(holes, model)
	if m, ok := f.(*fill.Model); !ok || err != nil || !strings.Contains(m.Model.Name(), "m1") {
		t.Errorf("a model: %T %v", f, err)
	}
}

// TestSettingsStreamFiller: a plan that arrives as it runs gets the fills
// file's filler, else a model's when one is configured, else none.
func TestSettingsStreamFiller(t *testing.T) {
	if f, err := (fill.Settings{}).StreamFiller(envOf(nil)); f != nil || err != nil {
		t.Errorf("no model: %v %v", f, err)
	}
	if f, err := (fill.Settings{}).StreamFiller(envOf(map[string]string{"ANTHROPIC_API_KEY": "k"})); err != nil {
		t.Errorf("a model: %v", err)
	} else if _, ok := f.(*fill.Model); !ok {
		t.Errorf("a model: %T", f)
	}
	if f, err := (fill.Settings{Fills: `{}`}).StreamFiller(envOf(nil)); err != nil {
		t.Errorf("fills file: %v", err)
	} else if _, ok := f.(*fill.Script); !ok {
		t.Errorf("fills file: %T", f)
	}
}

// TestSettingsRecord: the settings a journal holds keep their names, so
// that the runs journaled before read back the same.
func TestSettingsRecord(t *testing.T) {
	s := fill.Settings{Fills: "{}", FillsFile: "a.fills.json", Provider: "openai", BaseURL: "http://h", Model: "m", MaxTokens: 5, Timeout: 2, MaxFills: 3}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"fills":"{}","fillsFile":"a.fills.json","provider":"openai","baseURL":"http://h","model":"m","maxTokens":5,"requestTimeout":2,"maxFills":3}`
	if string(b) != want {
		t.Errorf("got %s\nwant %s", b, want)
	}
	var back fill.Settings
	if err := json.Unmarshal(b, &back); err != nil || back != s {
		t.Errorf("read back %+v %v", back, err)
	}
}
