package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/keel-dev/keel/internal/cost"
	"github.com/keel-dev/keel/internal/models"
	"github.com/keel-dev/keel/internal/provider/connect"
)

func (a *app) modelsCommand() *cobra.Command {
	opts := &modelsOptions{}
	cmd := &cobra.Command{
		Use:   "models",
		Short: "list the models the API key can use, with context window and price",
		Long: `models asks the API which models the key can use (GET /v1/models), caches the list
under KEEL_HOME for a day — the list aliases such as opus and sonnet resolve with — and prints
each model's aliases, context window, output limit and price. Without a key, or when the API
cannot be reached, it prints keel's built-in list.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runModels(cmd.Context(), opts) },
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	cmd.Flags().StringVar(&opts.Provider, "provider", "", "model API: anthropic (openai servers list no prices)")
	cmd.Flags().StringVar(&opts.BaseURL, "base-url", "", "base URL of the model API")
	return cmd
}

// modelsOptions are `keel models`'s.
type modelsOptions struct {
	JSON              bool
	Provider, BaseURL string
}

func (a *app) runModels(ctx context.Context, opts *modelsOptions) error {
	cfg := connect.Config{Provider: opts.Provider, BaseURL: opts.BaseURL}
	start := time.Now()
	cat, err := connect.LoadModels(ctx, cfg, a.getenv, a.env.Home, true)
	list, source := cat.Listed(), ""
	switch {
	case list != nil && !cat.Fetched().Before(start):
		source = "models the API lists for this key"
	case list != nil && err != nil:
		source = fmt.Sprintf("models the API listed on %s (it could not be asked again: %v)", cat.Fetched().Format(time.DateOnly), err)
	case list != nil:
		source = fmt.Sprintf("models the API listed on %s (cached; set ANTHROPIC_API_KEY to ask again)", cat.Fetched().Format(time.DateOnly))
	default:
		list = models.Builtin()
		source = "keel's built-in list (no answer from the API: set ANTHROPIC_API_KEY to see what your key can use)"
		if err != nil {
			source = fmt.Sprintf("keel's built-in list (the API was not reached: %v)", err)
		}
	}
	if opts.JSON {
		return writeModelsJSON(a.std.Out, cat, list)
	}
	return writeModels(a.std.Out, cat, list, source)
}

func writeModels(w io.Writer, cat *models.Catalog, list []models.Model, source string) error {
	fmt.Fprintf(w, "%s; prices in US dollars per million tokens\n\n", source)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MODEL\tALIASES\tCONTEXT\tMAX OUTPUT\tINPUT\tOUTPUT\tCACHE WRITE 5m / 1h\tCACHE READ")
	var notes []string
	for _, m := range list {
		aliases := strings.Join(cat.AliasesOf(m.ID), ", ")
		if aliases == "" {
			aliases = "-"
		}
		row := []string{m.ID, aliases, tokens(m.ContextWindow), tokens(m.MaxOutputTokens)}
		p, ok := cost.Lookup(m.ID)
		if !ok {
			row = append(row, "price unknown", "", "", "")
		} else {
			tier := func(short, long float64) string {
				if p.LongPrompt == nil {
					return dollars(short)
				}
				return dollars(short) + " (" + dollars(long) + ")"
			}
			long := p.Rates
			if p.LongPrompt != nil {
				long = *p.LongPrompt
			}
			row = append(row, tier(p.Input, long.Input), tier(p.Output, long.Output),
				tier(p.CacheWrite5m, long.CacheWrite5m)+" / "+tier(p.CacheWrite1h, long.CacheWrite1h), tier(p.CacheRead, long.CacheRead))
			if p.LongPrompt != nil {
				notes = append(notes, fmt.Sprintf("%s: (in parentheses) every token of a request whose prompt is over %s tokens", m.ID, tokens(p.LongThreshold)))
			}
			if p.Note != "" {
				row[0] += " *"
				notes = append(notes, m.ID+" * "+p.Note)
			}
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(notes) > 0 {
		fmt.Fprintf(w, "\n%s\n", strings.Join(notes, "\n"))
	}
	return nil
}

func writeModelsJSON(w io.Writer, cat *models.Catalog, list []models.Model) error {
	type priceJSON struct {
		cost.Rates
		LongPromptThreshold int64       `json:"long_prompt_threshold,omitempty"`
		LongPrompt          *cost.Rates `json:"long_prompt,omitempty"`
		Note                string      `json:"note,omitempty"`
	}
	type modelJSON struct {
		ID              string     `json:"id"`
		DisplayName     string     `json:"display_name,omitempty"`
		Aliases         []string   `json:"aliases"`
		ContextWindow   int64      `json:"context_window,omitempty"`
		MaxOutputTokens int64      `json:"max_output_tokens,omitempty"`
		Created         string     `json:"created_at,omitempty"`
		Price           *priceJSON `json:"price"`
	}
	out := []modelJSON{}
	for _, m := range list {
		e := modelJSON{ID: m.ID, DisplayName: m.DisplayName, Aliases: append([]string{}, cat.AliasesOf(m.ID)...),
			ContextWindow: m.ContextWindow, MaxOutputTokens: m.MaxOutputTokens}
		if !m.Created.IsZero() {
			e.Created = m.Created.Format(time.DateOnly)
		}
		if p, ok := cost.Lookup(m.ID); ok {
			e.Price = &priceJSON{Rates: p.Rates, LongPromptThreshold: p.LongThreshold, LongPrompt: p.LongPrompt, Note: p.Note}
		}
		out = append(out, e)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// tokens renders a token count the way model pages do: 1M, 128K, 200K.
func tokens(n int64) string {
	switch {
	case n == 0:
		return "?"
	case n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n%1000 == 0:
		return fmt.Sprintf("%dK", n/1000)
	}
	return fmt.Sprint(n)
}

func dollars(v float64) string {
	s := fmt.Sprintf("%.3f", v)
	s = strings.TrimRight(s, "0")
	if strings.HasSuffix(s, ".") || len(s)-strings.IndexByte(s, '.') < 3 {
		s = fmt.Sprintf("%.2f", v)
	}
	return s
}
