// Package connect picks and configures the model provider from options and the environment,
// once, for the CLI and the library alike, and wraps it with keel's retry policy.
package connect

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/provider/anthropic"
	"github.com/keel-dev/keel/internal/provider/openai"
)

// DefaultModel is the model used when neither an option nor the environment names one.
const DefaultModel = anthropic.DefaultModel

// Config says which provider to use; empty fields fall back to the environment.
type Config struct {
	// Provider is "anthropic" (default) or "openai".
	Provider string
	Model    string
	APIKey   string
	BaseURL  string
	Logger   *slog.Logger
	// Retry overrides the retry policy (tests shorten the delays).
	Retry *provider.RetryPolicy
}

// OSEnv reads the process environment; the CLI passes its own getenv instead.
func OSEnv(key string) string { return os.Getenv(key) }

// Providers lists the accepted provider names.
var Providers = []string{"anthropic", "openai"}

// Open returns the configured provider, already retrying, and the model to request.
func Open(cfg Config, getenv func(string) string) (provider.Provider, string, error) {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var (
		p     provider.Provider
		model string
	)
	cfg.Model = ResolveModel(cfg.Model)
	switch cfg.Provider {
	case "", "anthropic":
		opts := anthropic.FromEnv(getenv)
		override(&opts.APIKey, cfg.APIKey)
		override(&opts.BaseURL, cfg.BaseURL)
		override(&opts.Model, cfg.Model)
		opts.Logger = logger
		ap, err := anthropic.New(opts)
		if err != nil {
			return nil, "", err
		}
		p, model = ap, ap.Model()
	case "openai":
		opts := openai.FromEnv(getenv)
		override(&opts.APIKey, cfg.APIKey)
		override(&opts.BaseURL, cfg.BaseURL)
		override(&opts.Model, cfg.Model)
		opts.Logger = logger
		if opts.Model == "" {
			return nil, "", fmt.Errorf("no model for the OpenAI-compatible provider: pass --model or set %s", openai.EnvModel)
		}
		op, err := openai.New(opts)
		if err != nil {
			return nil, "", err
		}
		p, model = op, opts.Model
	default:
		return nil, "", fmt.Errorf("provider %q is not one of anthropic, openai", cfg.Provider)
	}
	policy := provider.RetryPolicy{}
	if cfg.Retry != nil {
		policy = *cfg.Retry
	}
	return provider.WithRetries(p, policy, logger), model, nil
}

func override(dst *string, v string) {
	if v != "" {
		*dst = v
	}
}

// aliases are the short model names agent files and --model use, as Claude tools define them.
var aliases = map[string]string{
	"sonnet": "claude-sonnet-4-5",
	"opus":   "claude-opus-4-5",
	"haiku":  "claude-haiku-4-5",
}

// ResolveModel turns an alias (sonnet, opus, haiku) into a model id; anything else — a full
// id, a local server's model name — passes unchanged.
func ResolveModel(model string) string {
	if id, ok := aliases[model]; ok {
		return id
	}
	return model
}
