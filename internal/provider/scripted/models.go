package scripted

import (
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/keel-dev/keel/internal/models"
)

// modelInfo is one entry of GET /v1/models, in the API's shape.
type modelInfo struct {
	Type           string `json:"type"`
	ID             string `json:"id"`
	DisplayName    string `json:"display_name"`
	CreatedAt      string `json:"created_at"`
	MaxInputTokens int64  `json:"max_input_tokens,omitempty"`
	MaxTokens      int64  `json:"max_tokens,omitempty"`
}

// listModels is the list the server offers: the scenario's models, else keel's built-in
// table, newest first (the API lists more recently released models first).
func (s *Server) listModels() []models.Model {
	if len(s.sc.Models) > 0 {
		out := slices.Clone(s.sc.Models)
		slices.SortStableFunc(out, func(a, b models.Model) int { return b.Created.Compare(a.Created) })
		return out
	}
	return models.Builtin()
}

// handleModels answers GET /v1/models with the API's pagination: limit (1 to 1000, default
// 20), after_id and before_id cursors, has_more, first_id and last_id. Not recorded or
// numbered: it is no model request.
func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	if status, msg := checkAnthropicHeaders(r); status != 0 {
		writeAnthropicError(w, status, msg)
		return
	}
	q := r.URL.Query()
	limit := 20
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			writeAnthropicError(w, http.StatusBadRequest, "limit: must be an integer from 1 to 1000")
			return
		}
		limit = n
	}
	all := s.listModels()
	start, end := 0, len(all)
	if id := q.Get("after_id"); id != "" {
		i := slices.IndexFunc(all, func(m models.Model) bool { return m.ID == id })
		if i < 0 {
			writeAnthropicError(w, http.StatusBadRequest, "after_id: no model "+id)
			return
		}
		start = i + 1
	}
	if id := q.Get("before_id"); id != "" {
		i := slices.IndexFunc(all, func(m models.Model) bool { return m.ID == id })
		if i < 0 {
			writeAnthropicError(w, http.StatusBadRequest, "before_id: no model "+id)
			return
		}
		end = i
		start = max(start, end-limit)
	}
	page := all[start:min(end, start+limit)]
	data := make([]modelInfo, 0, len(page))
	for _, m := range page {
		created := m.Created
		if created.IsZero() {
			created = time.Unix(0, 0).UTC() // the API's "epoch when unknown"
		}
		name := m.DisplayName
		if name == "" {
			name = m.ID
		}
		data = append(data, modelInfo{Type: "model", ID: m.ID, DisplayName: name, CreatedAt: created.Format(time.RFC3339),
			MaxInputTokens: m.ContextWindow, MaxTokens: m.MaxOutputTokens})
	}
	resp := map[string]any{"data": data, "has_more": start+len(page) < end, "first_id": nil, "last_id": nil}
	if len(page) > 0 {
		resp["first_id"], resp["last_id"] = page[0].ID, page[len(page)-1].ID
	}
	writeJSON(w, http.StatusOK, resp)
}
