// Package connect picks and configures the model provider from options and the environment,
// once, for the CLI and the library alike, and wraps it with keel's retry policy.
package connect

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/keel-dev/keel/internal/models"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/provider/anthropic"
	"github.com/keel-dev/keel/internal/provider/openai"
)

// DefaultModel is the model used when neither an option nor the environment names one and no
// fresher model list says otherwise.
const DefaultModel = models.DefaultModel

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
	// Models resolves aliases (opus, sonnet, haiku, fable, default…); nil means keel's
	// built-in table. See [LoadModels].
	Models *models.Catalog
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
	switch cfg.Provider {
	case "", "anthropic":
		opts := anthropic.FromEnv(getenv)
		override(&opts.APIKey, cfg.APIKey)
		override(&opts.BaseURL, cfg.BaseURL)
		override(&opts.Model, cfg.Model)
		cat := cfg.Models
		if cat == nil {
			cat = models.Builtins()
		}
		opts.Model = cat.WithOverrides(FamilyOverrides(getenv)).Resolve(opts.Model)
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
		override(&opts.Model, ResolveModel(cfg.Model))
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

// ResolveModel turns an alias (opus, sonnet, haiku, fable, default, best…) into a model id
// from keel's built-in table; anything else — a full id, a local server's model name —
// passes unchanged. A session resolves with its [models.Catalog] instead, which knows what
// the API listed.
func ResolveModel(model string) string {
	if !models.IsAlias(model) {
		return model
	}
	return models.Builtins().Resolve(model)
}

// PlanModel is the model to plan with when the model asked for (cfg.Model, else
// ANTHROPIC_MODEL) is opusplan — opus while planning, sonnet otherwise, as in Claude Code —
// and "" for any other model.
func PlanModel(cfg Config, getenv func(string) string) string {
	name := cfg.Model
	if name == "" {
		name = getenv(anthropic.EnvModel)
	}
	if name != "opusplan" {
		return ""
	}
	cat := cfg.Models
	if cat == nil {
		cat = models.Builtins()
	}
	return cat.WithOverrides(FamilyOverrides(getenv)).Resolve("opus")
}

// Family overrides, as Claude Code names them (and keel's own for fable).
const (
	EnvDefaultOpus   = "ANTHROPIC_DEFAULT_OPUS_MODEL"
	EnvDefaultSonnet = "ANTHROPIC_DEFAULT_SONNET_MODEL"
	EnvDefaultHaiku  = "ANTHROPIC_DEFAULT_HAIKU_MODEL"
	EnvDefaultFable  = "ANTHROPIC_DEFAULT_FABLE_MODEL"
)

// FamilyOverrides reads the model each family's alias is pinned to.
func FamilyOverrides(getenv func(string) string) map[string]string {
	return map[string]string{"opus": getenv(EnvDefaultOpus), "sonnet": getenv(EnvDefaultSonnet),
		"haiku": getenv(EnvDefaultHaiku), "fable": getenv(EnvDefaultFable)}
}

// RefreshTimeout bounds the model list's refresh on the way to a session.
const RefreshTimeout = 5 * time.Second

// LoadModels returns the model catalog for the endpoint cfg names: the list cached under
// home, refreshed from the API's GET /v1/models when it is a day old (or force is set) and
// the provider is Anthropic's with a key; then keel's built-in table, with the families the
// environment pins. The error says why a refresh failed; the catalog is usable regardless.
func LoadModels(ctx context.Context, cfg Config, getenv func(string) string, home string, force bool) (*models.Catalog, error) {
	if cfg.Provider != "" && cfg.Provider != "anthropic" {
		return models.Builtins(), nil
	}
	opts := anthropic.FromEnv(getenv)
	override(&opts.APIKey, cfg.APIKey)
	override(&opts.BaseURL, cfg.BaseURL)
	opts.Logger = cfg.Logger
	base := opts.BaseURL
	if base == "" {
		base = anthropic.DefaultBaseURL
	}
	cat := models.Load(home, base)
	now := time.Now()
	var err error
	if ap, newErr := anthropic.New(opts); newErr == nil && (force || cat.Stale(now)) {
		ctx, cancel := context.WithTimeout(ctx, RefreshTimeout)
		defer cancel()
		err = cat.Refresh(ctx, ap, base, now)
	}
	return cat.WithOverrides(FamilyOverrides(getenv)), err
}
