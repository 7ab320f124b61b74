package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/toolkit/llm"
	"github.com/obelisk-plan/obelisk/toolkit/llm/anthropic"
	"github.com/obelisk-plan/obelisk/toolkit/llm/openai"
	"github.com/obelisk-plan/obelisk/vm"
	"github.com/obelisk-plan/obelisk/vm/fill"
)

// fillFlags choose what completes the holes and tasks of a plan that is
// run: a fills file (the scripted answers of a model, as a mocks file
// answers tools), else a model.
type fillFlags struct {
	fills    string
	maxFills int
	model    llm.Settings
}

func (ff *fillFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&ff.fills, "fills", "", "a fills file answering the plan's holes and tasks, by step ID, instead of a model (default: NAME.fills.json beside the plan, if any)")
	fs.StringVar(&ff.model.Provider, "provider", "", "the provider of the model that fills holes and chooses for tasks: openai (also any OpenAI-compatible server) or anthropic (default: OBELISK_PROVIDER, else the one whose API key is set)")
	fs.StringVar(&ff.model.BaseURL, "base-url", "", "the model provider's base URL, such as http://localhost:11434/v1 for Ollama (default: OPENAI_BASE_URL or ANTHROPIC_BASE_URL)")
	fs.StringVar(&ff.model.Model, "model", "", fmt.Sprintf("the model that fills holes and chooses for tasks (default: OBELISK_MODEL, else %s or %s)", llm.DefaultOpenAIModel, llm.DefaultAnthropicModel))
	fs.IntVar(&ff.model.MaxTokens, "max-tokens", 0, "the most tokens a model's answer may have (default: the provider's)")
	fs.DurationVar(&ff.model.Timeout, "request-timeout", 5*time.Minute, "the longest one model request may take, answer included")
	fs.IntVar(&ff.maxFills, "max-fills", 1000, "the most times the run may ask the model (or the fills file) to fill a hole or choose for a task; then the step fails with limit-exceeded")
}

// fillSettings are what a journaled run records to fill its holes and
// tasks again when it is resumed: the fills file's text, or the model's
// settings (never its API key, which comes from the environment).
type fillSettings struct {
	Fills     string        `json:"fills,omitempty"`
	FillsFile string        `json:"fillsFile,omitempty"`
	Provider  string        `json:"provider,omitempty"`
	BaseURL   string        `json:"baseURL,omitempty"`
	Model     string        `json:"model,omitempty"`
	MaxTokens int           `json:"maxTokens,omitempty"`
	Timeout   time.Duration `json:"requestTimeout,omitempty"`
	MaxFills  int           `json:"maxFills,omitempty"`
}

// settings returns what the flags say, with the fills file read: base is
// the plan's path without its extension, for NAME.fills.json ("" for
// none).
func (ff *fillFlags) settings(base string) (fillSettings, error) {
	s := fillSettings{Provider: ff.model.Provider, BaseURL: ff.model.BaseURL, Model: ff.model.Model, MaxTokens: ff.model.MaxTokens, Timeout: ff.model.Timeout, MaxFills: ff.maxFills}
	path := ff.fills
	if path == "" && base != "" {
		if _, err := os.Stat(base + ".fills.json"); err == nil {
			path = base + ".fills.json"
		}
	}
	if path == "" {
		return s, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return s, fmt.Errorf("reading fills: %w", err)
	}
	s.Fills, s.FillsFile = string(b), path
	return s, nil
}

// filler builds the filler of a run of prog: the fills file's, else a
// model's, which is opened only when the plan leaves something to a
// model. It returns nil when the plan leaves nothing; and an error that
// says how to give one when it does and none is configured.
func (s fillSettings) filler(e *env, prog *compiler.Program) (vm.Filler, error) {
	var needs []string
	if prog != nil {
		needs = vm.NeedsFiller(prog)
	}
	if s.Fills != "" {
		script, err := fill.ParseScript([]byte(s.Fills))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.FillsFile, err)
		}
		if len(needs) > 0 {
			e.log.Info("filling holes and tasks from a fills file", "file", s.FillsFile)
		}
		return script, nil
	}
	if len(needs) == 0 {
		return nil, nil
	}
	if _, err := llm.Resolve(s.llmSettings(), e.getenv); errors.Is(err, llm.ErrNoProvider) {
		return nil, fmt.Errorf("%s left for a model to complete when it runs, and no model is configured: give a fills file (--fills, or NAME.fills.json beside the plan), or a model.\n%w", describeNeeds(needs), err)
	}
	return s.open(e)
}

// open opens the model of the settings as a filler.
func (s fillSettings) open(e *env) (vm.Filler, error) {
	settings, err := llm.Resolve(s.llmSettings(), e.getenv)
	if err != nil {
		return nil, err
	}
	var model llm.Model
	if settings.Provider == llm.Anthropic {
		model = anthropic.New(settings, nil)
	} else {
		model = openai.New(settings, nil)
	}
	e.log.Info("a model fills holes and chooses for tasks", "model", model.Name())
	return &fill.Model{Model: model}, nil
}

// streamFiller builds the filler of a plan that arrives as it runs,
// before anyone knows whether it has holes or tasks: the fills file's, or
// a model's when one is configured, or none.
func (s fillSettings) streamFiller(e *env) (vm.Filler, error) {
	if s.Fills != "" {
		return s.filler(e, nil)
	}
	if _, err := llm.Resolve(s.llmSettings(), e.getenv); errors.Is(err, llm.ErrNoProvider) {
		return nil, nil
	}
	return s.open(e)
}

func (s fillSettings) llmSettings() llm.Settings {
	return llm.Settings{Provider: s.Provider, BaseURL: s.BaseURL, Model: s.Model, MaxTokens: s.MaxTokens, Timeout: s.Timeout}
}

func describeNeeds(steps []string) string {
	if len(steps) == 1 {
		return "step " + steps[0] + " has something"
	}
	return "steps " + strings.Join(steps, ", ") + " have something"
}
