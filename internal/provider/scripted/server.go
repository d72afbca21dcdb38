package scripted

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Options configure a [Server]. The zero value works.
type Options struct {
	// Logger receives one line per request; nil discards.
	Logger *slog.Logger
	// Now is the clock of cache TTLs and chat-completion timestamps; nil means time.Now.
	Now func() time.Time
}

// Recorded is one model request as the server saw and answered it.
type Recorded struct {
	// N is the 1-based number of the request among all model requests.
	N int
	// API is "anthropic" (/v1/messages) or "openai" (/v1/chat/completions).
	API  string
	Path string
	// Body is the raw request body.
	Body   []byte
	Stream bool
	// Attempt is 1 plus the number of earlier requests with the same body: a retry of a
	// request is attempt 2, 3, ….
	Attempt int
	// Rule is the name of the rule that answered ("rule N" for an unnamed rule, "fallback"),
	// empty when the request was rejected before matching.
	Rule string
	// Fault describes the fault applied ("status 529", "drop after 3 events", "delay 10ms"),
	// empty when none.
	Fault string
	// Status is the HTTP status answered; Error the error message of a non-200 answer.
	Status int
	Error  string
	// Cache is the prompt-cache accounting. A request answered with an error status reads
	// and writes nothing and adds no shared prefix, like a request the API refused.
	Cache CacheAccount
	// AppliedEdits is what the request's context editing did (its response's
	// context_management.applied_edits): empty when no edit applied, nil when it asked for
	// none. Cache accounts the edited prompt.
	AppliedEdits []AppliedEdit
}

// Server is the scripted model: an [http.Handler] answering the Anthropic Messages API and
// OpenAI chat completions from a [Scenario]. It is safe for concurrent use.
type Server struct {
	sc     *Scenario
	logger *slog.Logger
	now    func() time.Time
	mux    *http.ServeMux

	// mu guards fired, cache, log and changed.
	mu      sync.Mutex
	fired   []int // fire count per rule
	cache   *promptCache
	log     []Recorded
	changed chan struct{} // closed and replaced whenever log grows

	// Set by Start.
	http *http.Server
	url  string
	done chan struct{}
}

// New returns a Server for sc; it serves nothing until mounted or started with [Start]. It
// fails if sc does not validate.
func New(sc *Scenario, opts Options) (*Server, error) {
	if sc == nil {
		sc = &Scenario{}
	}
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	s := &Server{
		sc:      sc,
		logger:  opts.Logger,
		now:     opts.Now,
		fired:   make([]int, len(sc.Rules)),
		cache:   newPromptCache(),
		changed: make(chan struct{}),
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("POST /v1/messages", s.handleMessages)
	s.mux.HandleFunc("POST /v1/messages/count_tokens", s.handleCountTokens)
	s.mux.HandleFunc("POST /v1/chat/completions", s.handleChat)
	s.mux.HandleFunc("GET /v1/models", s.handleModels)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeAnthropicError(w, http.StatusNotFound, fmt.Sprintf("%s %s: not found (the scripted model serves POST /v1/messages, /v1/messages/count_tokens, /v1/chat/completions and GET /v1/models)", r.Method, r.URL.Path))
	})
	return s, nil
}

// ServeHTTP implements [http.Handler].
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Start listens on addr ("" means 127.0.0.1:0, a free loopback port) and serves sc until
// Close is called or ctx is done. The base URL for SDK clients is [Server.URL].
func Start(ctx context.Context, addr string, sc *Scenario, opts Options) (*Server, error) {
	s, err := New(sc, opts)
	if err != nil {
		return nil, err
	}
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for scripted model: %w", err)
	}
	s.url = "http://" + ln.Addr().String()
	s.http = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.logger.Handler(), slog.LevelDebug),
	}
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		_ = s.http.Serve(ln) // returns http.ErrServerClosed after Close
	}()
	stop := context.AfterFunc(ctx, func() { _ = s.Close() })
	go func() { <-s.done; stop() }()
	return s, nil
}

// Serve runs the scripted model on addr until ctx is done; it is the body of the `keel`
// sub-command. The listening URL is logged at Info.
func Serve(ctx context.Context, addr string, sc *Scenario, logger *slog.Logger) error {
	s, err := Start(ctx, addr, sc, Options{Logger: logger})
	if err != nil {
		return err
	}
	s.logger.Info("scripted model listening", "url", s.URL())
	<-ctx.Done()
	return s.Close()
}

// URL is the base URL of a started server, like http://127.0.0.1:41234 (no trailing slash).
func (s *Server) URL() string { return s.url }

// Close stops a started server, closing open connections, and waits for it. It is safe to
// call more than once.
func (s *Server) Close() error {
	if s.http == nil {
		return nil
	}
	err := s.http.Close()
	<-s.done
	return err
}

// Requests returns a copy of the request log, oldest first.
func (s *Server) Requests() []Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Recorded(nil), s.log...)
}

// WaitRequests blocks until at least n model requests were recorded, then returns the log.
func (s *Server) WaitRequests(ctx context.Context, n int) ([]Recorded, error) {
	for {
		s.mu.Lock()
		if len(s.log) >= n {
			out := append([]Recorded(nil), s.log...)
			s.mu.Unlock()
			return out, nil
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for request %d: %w", n, context.Cause(ctx))
		}
	}
}

// maxBody bounds a request body; real transcripts reach megabytes, not gigabytes.
const maxBody = 64 << 20

func readBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("read request body: %w", err)
	}
	if len(b) > maxBody {
		return nil, fmt.Errorf("request body exceeds %d bytes", maxBody)
	}
	return b, nil
}

// decision is what the server decided for one request, under its lock.
type decision struct {
	rec   Recorded
	rule  *Rule
	fault *Fault
}

// decide numbers the request, picks the rule, does the cache accounting and records the
// request. p is nil when the request was rejected with rejectStatus and rejectMsg.
func (s *Server) decide(api string, r *http.Request, body []byte, p *parsed, rejectStatus int, rejectMsg string) decision {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := decision{rec: Recorded{
		N:    len(s.log) + 1,
		API:  api,
		Path: r.URL.Path,
		Body: body,
	}}
	d.rec.Attempt = 1
	for _, prev := range s.log {
		if bytes.Equal(prev.Body, body) {
			d.rec.Attempt++
		}
	}
	if p == nil {
		d.rec.Status, d.rec.Error = rejectStatus, rejectMsg
	} else {
		d.rec.Stream = p.stream
		d.rec.AppliedEdits = p.applied
		d.rule, d.rec.Rule = s.pick(d.rec.N, &p.view)
		d.fault = d.rule.Fault
		d.rec.Status = http.StatusOK
		commit := true
		if f := d.fault; f != nil {
			d.rec.Fault = describeFault(f)
			if f.Status != 0 {
				commit = false
				d.rec.Status = f.Status
				d.rec.Error = faultMessage(f)
			}
		}
		now := s.now()
		if api == apiOpenAI {
			d.rec.Cache = s.cache.openai(now, s.sc.Cache, p.view.model, p.blocks, commit)
		} else {
			d.rec.Cache = s.cache.anthropic(now, s.sc.Cache, p.view.model, p.blocks, commit)
		}
	}
	s.log = append(s.log, d.rec)
	close(s.changed)
	s.changed = make(chan struct{})
	s.logger.Info("scripted request", "n", d.rec.N, "api", api, "attempt", d.rec.Attempt,
		"rule", d.rec.Rule, "fault", d.rec.Fault, "status", d.rec.Status,
		"input_tokens", d.rec.Cache.InputTokens, "cache_read", d.rec.Cache.CacheReadTokens,
		"cache_created", d.rec.Cache.CacheCreationTokens)
	return d
}

// pick returns the first rule that matches and has uses left, counting the use, or the
// fallback. Callers hold s.mu.
func (s *Server) pick(n int, v *view) (*Rule, string) {
	for i := range s.sc.Rules {
		r := &s.sc.Rules[i]
		if r.Times > 0 && s.fired[i] >= r.Times {
			continue
		}
		if !r.When.matches(n, v) {
			continue
		}
		s.fired[i]++
		name := r.Name
		if name == "" {
			name = fmt.Sprintf("rule %d", i+1)
		}
		return r, name
	}
	if s.sc.Fallback != nil {
		return s.sc.Fallback, "fallback"
	}
	return &builtinFallback, "fallback"
}

var builtinFallback = Rule{Reply: []Block{{Kind: KindText, Text: DefaultFallbackText}}}

func describeFault(f *Fault) string {
	var parts []string
	if f.Status != 0 {
		parts = append(parts, fmt.Sprintf("status %d", f.Status))
	}
	if f.DropAfter != 0 {
		parts = append(parts, fmt.Sprintf("drop after %d events", f.DropAfter))
	}
	if f.Corrupt != 0 {
		parts = append(parts, fmt.Sprintf("corrupt event %d", f.Corrupt))
	}
	if f.Delay != 0 {
		parts = append(parts, fmt.Sprintf("delay %s", f.Delay))
	}
	if f.Hold != nil {
		parts = append(parts, fmt.Sprintf("held after %d events", f.HoldAfter))
	}
	return strings.Join(parts, ", ")
}

// pace runs before every stream event: it waits for the fault's delay and aborts the
// connection once DropAfter events were sent. sent is the number of events written so far.
func pace(ctx context.Context, w http.ResponseWriter, f *Fault, sent int) error {
	if f == nil {
		return nil
	}
	if f.DropAfter > 0 && sent >= f.DropAfter {
		dropConnection(w)
	}
	if f.Hold != nil && sent == f.HoldAfter {
		select {
		case <-f.Hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if f.Delay > 0 {
		t := time.NewTimer(f.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// dropConnection flushes what was written and makes net/http close the TCP connection without
// finishing the response, so the client sees the stream cut short.
func dropConnection(w http.ResponseWriter) {
	_ = http.NewResponseController(w).Flush()
	panic(http.ErrAbortHandler)
}

// finish applies a DropAfter that is not smaller than the number of events: the stream ends
// with every event sent but without a proper end of the response.
func finish(w http.ResponseWriter, f *Fault) {
	if f != nil && f.DropAfter > 0 {
		dropConnection(w)
	}
}
