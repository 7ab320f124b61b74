package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/obelisk-plan/obelisk/compiler"
	"github.com/obelisk-plan/obelisk/toolkit/llm"
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

// settings returns what the flags say, with the fills file read: base is
// the plan's path without its extension, for NAME.fills.json ("" for
// none).
func (ff *fillFlags) settings(base string) (fill.Settings, error) {
	s := fill.Settings{Provider: ff.model.Provider, BaseURL: ff.model.BaseURL, Model: ff.model.Model, MaxTokens: ff.model.MaxTokens, Timeout: ff.model.Timeout, MaxFills: ff.maxFills}
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

// openFiller builds the filler of a run of prog (fill.Settings.Filler, or
// StreamFiller when prog is nil, for a plan that arrives as it runs), and
// logs what fills.
func openFiller(e *env, s fill.Settings, prog *compiler.Program) (vm.Filler, error) {
	var f vm.Filler
	var err error
	if prog == nil {
		f, err = s.StreamFiller(e.getenv)
	} else {
		f, err = s.Filler(prog, e.getenv)
	}
	switch f := f.(type) {
	case *fill.Script:
		if prog != nil && len(vm.NeedsFiller(prog)) > 0 {
			e.log.Info("filling holes and tasks from a fills file", "file", s.FillsFile)
		}
	case *fill.Model:
		e.log.Info("a model fills holes and chooses for tasks", "model", f.Model.Name())
	}
	return f, err
}
