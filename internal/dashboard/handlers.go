package dashboard

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

func (s *Server) view(w http.ResponseWriter, r *http.Request) {
	b, _, _ := s.hub.latest(r.Context())
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b)
}

// events streams the view as server-sent events: the current one at once, then each newer
// one, until the client goes or the dashboard stops.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	var last uint64
	for {
		b, seq, changed := s.hub.latest(r.Context())
		if r.Context().Err() != nil {
			return
		}
		if seq != last {
			last = seq
			if _, err := fmt.Fprintf(w, "id: %d\nevent: view\ndata: %s\n\n", seq, b); err != nil {
				return
			}
			flusher.Flush()
		}
		select {
		case <-r.Context().Done():
			return
		case <-s.stopping:
			return
		case <-changed:
		}
	}
}

func (s *Server) session(w http.ResponseWriter, r *http.Request) {
	conv := s.hub.c.sessions.conversation(r.Context(), r.URL.Query().Get("id"))
	writeJSON(w, http.StatusOK, conv)
}

// answer resolves a permission request: {"team", "id", "allow", "reason"}.
func (s *Server) answer(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Team   string `json:"team"`
		ID     string `json:"id"`
		Allow  bool   `json:"allow"`
		Reason string `json:"reason"`
	}
	t, ok := s.action(w, r, &in, func() string { return in.Team })
	if !ok {
		return
	}
	reason := strings.TrimSpace(in.Reason)
	if !in.Allow && reason == "" {
		reason = "denied from the dashboard"
	}
	if err := t.Answer(r.Context(), in.ID, in.Allow, reason); err != nil {
		writeError(w, http.StatusConflict, err)
		return
	}
	s.logger.Info("dashboard answered a permission request", "team", in.Team, "id", in.ID, "allow", in.Allow)
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

// message sends a member a message from the user: {"team", "to", "text"}.
func (s *Server) message(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Team string `json:"team"`
		To   string `json:"to"`
		Text string `json:"text"`
	}
	t, ok := s.action(w, r, &in, func() string { return in.Team })
	if !ok {
		return
	}
	if strings.TrimSpace(in.Text) == "" {
		writeError(w, http.StatusBadRequest, errors.New("the message is empty"))
		return
	}
	id, err := t.SendFromUser(r.Context(), in.To, in.Text)
	if err != nil {
		writeError(w, http.StatusConflict, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"id": id})
}

// stop asks the supervisor to stop a background agent: {"id"}.
func (s *Server) stop(w http.ResponseWriter, r *http.Request) {
	var in struct {
		ID string `json:"id"`
	}
	if !decode(w, r, &in) {
		return
	}
	if s.cfg.Jobs == nil {
		writeError(w, http.StatusNotFound, errors.New("no supervisor is configured"))
		return
	}
	if err := s.cfg.Jobs.Stop(r.Context(), in.ID); err != nil {
		writeError(w, http.StatusConflict, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

// action decodes a team action's body and finds its team.
func (s *Server) action(w http.ResponseWriter, r *http.Request, in any, team func() string) (Team, bool) {
	if !decode(w, r, in) {
		return nil, false
	}
	t := s.hub.c.team(team())
	if t == nil {
		writeError(w, http.StatusNotFound, fmt.Errorf("no team %q is open here", team()))
		return nil, false
	}
	return t, true
}

func decode(w http.ResponseWriter, r *http.Request, in any) bool {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		// A form post from another page cannot send JSON without a CORS preflight.
		writeError(w, http.StatusUnsupportedMediaType, errors.New("send application/json"))
		return false
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(in); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("read the request: %w", err))
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, map[string]string{"error": err.Error()})
}
