package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/keel-dev/keel/internal/models"
	"github.com/keel-dev/keel/internal/provider"
)

var _ models.Lister = (*Provider)(nil)

// BaseURL is the API endpoint the provider talks to.
func (p *Provider) BaseURL() string { return p.baseURL }

// modelPage is one page of GET /v1/models.
type modelPage struct {
	Data    []models.Model `json:"data"`
	HasMore bool           `json:"has_more"`
	LastID  string         `json:"last_id"`
}

// ListModels lists the models the key can use (GET /v1/models, every page), newest first as
// the API orders them.
func (p *Provider) ListModels(ctx context.Context) ([]models.Model, error) {
	var out []models.Model
	after := ""
	for page := 0; page < 20; page++ {
		q := url.Values{"limit": {"1000"}}
		if after != "" {
			q.Set("after_id", after)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.baseURL+"/v1/models?"+q.Encode(), nil)
		if err != nil {
			return nil, fmt.Errorf("list models: %w", err)
		}
		req.Header.Set("anthropic-version", apiVersion)
		if p.apiKey != "" {
			req.Header.Set("x-api-key", p.apiKey)
		} else {
			req.Header.Set("authorization", "Bearer "+p.authToken)
		}
		resp, err := p.http.Do(req)
		if err != nil {
			return nil, fmt.Errorf("list models: %w", err)
		}
		if resp.StatusCode >= 300 {
			return nil, fmt.Errorf("list models: %w", provider.StatusFromResponse("anthropic", resp, "request-id", p.now()))
		}
		var pg modelPage
		err = json.NewDecoder(resp.Body).Decode(&pg)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("list models: decode: %w", err)
		}
		out = append(out, pg.Data...)
		if !pg.HasMore || pg.LastID == "" {
			return out, nil
		}
		after = pg.LastID
	}
	return out, nil
}
