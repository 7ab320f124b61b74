package fill

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/toolkit/llm"
	"github.com/obelisk-plan/obelisk/toolkit/llm/anthropic"
	"github.com/obelisk-plan/obelisk/toolkit/llm/openai"
	"github.com/obelisk-plan/obelisk/vm"
)

// Settings say what fills the holes and tasks of a run: the text of a
// fills file (Script), else a model (Model) of the provider settings.
// They are serialisable, so that a journaled run records them and fills
// its holes and tasks again when it is resumed; they never hold an API
// key, which comes from the environment when the model is opened.
type Settings struct {
	// Fills is the text of a fills file; FillsFile is its path, which
	// names it in errors.
	Fills     string `json:"fills,omitempty"`
	FillsFile string `json:"fillsFile,omitempty"`
	// Provider, BaseURL, Model, MaxTokens and Timeout are the model's
	// settings (llm.Settings), resolved against the environment.
	Provider  string        `json:"provider,omitempty"`
	BaseURL   string        `json:"baseURL,omitempty"`
	Model     string        `json:"model,omitempty"`
	MaxTokens int           `json:"maxTokens,omitempty"`
	Timeout   time.Duration `json:"requestTimeout,omitempty"`
	// MaxFills is the most fills a run may ask for (vm.Options.MaxFills).
	MaxFills int `json:"maxFills,omitempty"`
}

// LLM returns the model's settings, unresolved.
func (s Settings) LLM() llm.Settings {
	return llm.Settings{Provider: s.Provider, BaseURL: s.BaseURL, Model: s.Model, MaxTokens: s.MaxTokens, Timeout: s.Timeout}
}

// Filler builds the filler of a run of prog: the fills file's, else a
// model's, which is opened only when the plan leaves something to a
// model. getenv reads the environment for the model's provider and key
// (os.Getenv, say). It returns nil when the plan leaves nothing, and an
// error that says how to give a filler when it does and none is
// configured. A nil prog leaves nothing.
func (s Settings) Filler(prog *compiler.Program, getenv func(string) string) (vm.Filler, error) {
	var needs []string
	if prog != nil {
		needs = vm.NeedsFiller(prog)
	}
	if s.Fills != "" {
		script, err := ParseScript([]byte(s.Fills))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.FillsFile, err)
		}
		return script, nil
	}
	if len(needs) == 0 {
		return nil, nil
	}
	if _, err := llm.Resolve(s.LLM(), getenv); errors.Is(err, llm.ErrNoProvider) {
		return nil, fmt.Errorf("%s left for a model to complete when it runs, and no model is configured: give a fills file (fill.Settings.Fills), or a model.\n%w", describeNeeds(needs), err)
	}
	return s.open(getenv)
}

// StreamFiller builds the filler of a plan that arrives as it runs,
// before anyone knows whether it has holes or tasks: the fills file's,
// or a model's when one is configured, or none (nil).
func (s Settings) StreamFiller(getenv func(string) string) (vm.Filler, error) {
	if s.Fills != "" {
		return s.Filler(nil, getenv)
	}
	if _, err := llm.Resolve(s.LLM(), getenv); errors.Is(err, llm.ErrNoProvider) {
		return nil, nil
	}
	return s.open(getenv)
}

// open opens the model of the settings as a filler.
func (s Settings) open(getenv func(string) string) (vm.Filler, error) {
	settings, err := llm.Resolve(s.LLM(), getenv)
	if err != nil {
		return nil, err
	}
	return &Model{Model: OpenModel(settings)}, nil
}

// OpenModel opens the model of resolved settings (llm.Resolve) with its
// provider's client: Anthropic's, else OpenAI's (also any
// OpenAI-compatible server).
func OpenModel(settings llm.Settings) llm.Model {
	if settings.Provider == llm.Anthropic {
		return anthropic.New(settings, nil)
	}
	return openai.New(settings, nil)
}

func describeNeeds(steps []string) string {
	if len(steps) == 1 {
		return "step " + steps[0] + " has something"
	}
	return "steps " + strings.Join(steps, ", ") + " have something"
}
