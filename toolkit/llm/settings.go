package llm

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// The providers.
const (
	OpenAI    = "openai"    // OpenAI chat completions, and servers that speak it
	Anthropic = "anthropic" // the Anthropic Messages API
)

// The models used when none is named: a planning model, and a cheaper
// one for the evaluator (seed 000's heavy and nano tiers).
const (
	DefaultOpenAIModel        = "gpt-5.5"
	DefaultOpenAIEvalModel    = "gpt-5.4-mini"
	DefaultAnthropicModel     = "claude-sonnet-4-6"
	DefaultAnthropicEvalModel = "claude-haiku-4-5"
)

// OpenAIBaseURL is the base URL of OpenAI's own API.
const OpenAIBaseURL = "https://api.openai.com/v1"

// ErrNoProvider is returned by Resolve when nothing says which provider to
// use; its message says how to configure one.
var ErrNoProvider = errors.New(`no model provider is configured. Set one of:
  OPENAI_API_KEY=…                      OpenAI (models ` + DefaultOpenAIModel + `, ` + DefaultOpenAIEvalModel + `)
  ANTHROPIC_API_KEY=…                   Anthropic (models ` + DefaultAnthropicModel + `, ` + DefaultAnthropicEvalModel + `)
  OPENAI_BASE_URL=URL OBELISK_MODEL=…   an OpenAI-compatible server: Ollama (http://localhost:11434/v1),
                                        vLLM (http://localhost:8000/v1), llama.cpp (http://localhost:8080/v1)
OPENAI_BASE_URL, ANTHROPIC_BASE_URL, OBELISK_PROVIDER, OBELISK_MODEL and OBELISK_EVAL_MODEL
fill in the Settings left empty: BaseURL, Provider, Model and EvalModel`)

// ErrNoAPIKey and ErrNoModel are returned, wrapped, by Resolve when a
// setting the provider needs is missing: the OpenAI API's key, or the
// name of the model a server other than OpenAI's serves. errors.Is finds
// them; the message names the setting (llm.Settings.BaseURL,
// llm.Settings.Model) and its environment variable.
var (
	ErrNoAPIKey = errors.New("no API key")
	ErrNoModel  = errors.New("no model named")
)

// missing is an error of a missing setting: its message, and the
// sentinel errors.Is matches.
type missing struct {
	is  error
	msg string
}

func (e *missing) Error() string { return e.msg }
func (e *missing) Unwrap() error { return e.is }

// Settings say which provider answers and with which models. The zero
// value asks Resolve to fill everything from the environment.
type Settings struct {
	// Provider is OpenAI or Anthropic.
	Provider string
	// BaseURL is the API's address; empty means the provider's own.
	BaseURL string
	// APIKey authenticates requests. It comes from the environment only,
	// never from a flag, so that it does not show in process listings.
	APIKey string
	// Model plans; EvalModel judges steps (the cheaper tier).
	Model, EvalModel string
	// MaxTokens bounds each answer (0: the provider's default).
	MaxTokens int
	// MaxRetries is how often a request that failed for a transient
	// reason (rate limit, server error) is retried: 0 takes the
	// provider's default, -1 means never.
	MaxRetries int
	// Timeout bounds each request, stream included (0: none).
	Timeout time.Duration
}

// Resolve completes flag settings from the environment: flags win, then
// OBELISK_PROVIDER, OBELISK_MODEL and OBELISK_EVAL_MODEL, the provider's
// variables (OPENAI_API_KEY and OPENAI_BASE_URL, ANTHROPIC_API_KEY and
// ANTHROPIC_BASE_URL) and the default models. Without a provider it
// returns ErrNoProvider.
//
// The provider is the one named; else the one whose key is set (OpenAI
// when both are); else OpenAI when a base URL is given, for a local
// OpenAI-compatible server, which needs no key but needs a model name.
func Resolve(flags Settings, getenv func(string) string) (Settings, error) {
	s := flags
	if s.Provider == "" {
		s.Provider = getenv("OBELISK_PROVIDER")
	}
	openaiKey, anthropicKey := getenv("OPENAI_API_KEY"), getenv("ANTHROPIC_API_KEY")
	if s.Provider == "" {
		switch {
		case openaiKey != "":
			s.Provider = OpenAI
		case anthropicKey != "":
			s.Provider = Anthropic
		case s.BaseURL != "" || getenv("OPENAI_BASE_URL") != "":
			s.Provider = OpenAI
		default:
			return s, ErrNoProvider
		}
	}
	s.Provider = strings.ToLower(s.Provider)
	if s.Model == "" {
		s.Model = getenv("OBELISK_MODEL")
	}
	if s.EvalModel == "" {
		s.EvalModel = getenv("OBELISK_EVAL_MODEL")
	}
	switch s.Provider {
	case OpenAI:
		if s.BaseURL == "" {
			s.BaseURL = getenv("OPENAI_BASE_URL")
		}
		if s.APIKey == "" {
			s.APIKey = openaiKey
		}
		own := s.BaseURL == "" || strings.TrimSuffix(s.BaseURL, "/") == OpenAIBaseURL
		switch {
		case own && s.APIKey == "":
			return s, &missing{ErrNoAPIKey, "the openai provider needs OPENAI_API_KEY (or llm.Settings.BaseURL for an OpenAI-compatible server)"}
		case !own && s.Model == "":
			return s, &missing{ErrNoModel, fmt.Sprintf("a server at %s needs the name of its model: give its name (llm.Settings.Model, or OBELISK_MODEL)", s.BaseURL)}
		}
		if s.Model == "" {
			s.Model = DefaultOpenAIModel
		}
		if s.EvalModel == "" {
			s.EvalModel = DefaultOpenAIEvalModel
			if !own {
				s.EvalModel = s.Model // a local server usually serves one model
			}
		}
	case Anthropic:
		if s.BaseURL == "" {
			s.BaseURL = getenv("ANTHROPIC_BASE_URL")
		}
		if s.APIKey == "" {
			s.APIKey = anthropicKey
		}
		if s.APIKey == "" {
			return s, fmt.Errorf("the anthropic provider needs ANTHROPIC_API_KEY")
		}
		if s.Model == "" {
			s.Model = DefaultAnthropicModel
		}
		if s.EvalModel == "" {
			s.EvalModel = DefaultAnthropicEvalModel
		}
	default:
		return s, fmt.Errorf("unknown provider %q: use %s or %s", s.Provider, OpenAI, Anthropic)
	}
	if s.BaseURL != "" {
		u, err := url.Parse(s.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return s, fmt.Errorf("the base URL %q is not an http or https URL", s.BaseURL)
		}
	}
	return s, nil
}

// ForEvaluator returns the settings of the evaluator tier: the same
// provider with the evaluator model.
func (s Settings) ForEvaluator() Settings {
	e := s
	e.Model = s.EvalModel
	return e
}

// String describes the settings without the key.
func (s Settings) String() string {
	where := s.BaseURL
	if where == "" {
		where = "default endpoint"
	}
	return fmt.Sprintf("%s at %s: model %s, evaluator %s", s.Provider, where, s.Model, s.EvalModel)
}
