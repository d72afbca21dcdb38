package scripted

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/waittest"
)

func TestStatusFaults(t *testing.T) {
	tests := []struct {
		name    string
		fault   Fault
		path    string
		status  int
		headers map[string]string
		body    string
	}{
		{"529 overloaded", Fault{Status: 529}, "/v1/messages", 529, nil,
			`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_scripted_0001"}`},
		{"429 with retry-after", Fault{Status: 429, RetryAfter: 2, RetryAfterMS: 1500, Message: "slow down"}, "/v1/messages", 429,
			map[string]string{"retry-after": "2", "retry-after-ms": "1500"},
			`{"type":"error","error":{"type":"rate_limit_error","message":"slow down"},"request_id":"req_scripted_0001"}`},
		{"500 api error", Fault{Status: 500}, "/v1/messages", 500, nil,
			`{"type":"error","error":{"type":"api_error","message":"Internal server error (scripted)"},"request_id":"req_scripted_0001"}`},
		{"openai 429", Fault{Status: 429, RetryAfterMS: 10, Message: "slow down"}, "/v1/chat/completions", 429,
			map[string]string{"retry-after-ms": "10"},
			`{"error":{"message":"slow down","type":"requests","param":null,"code":"rate_limit_exceeded"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := tt.fault
			s := start(t, &Scenario{Rules: []Rule{{Fault: &f}}}, Options{})
			body := any(msgs(true, nil, user("hi")))
			if strings.Contains(tt.path, "chat") {
				body = chat(true, map[string]any{"role": "user", "content": "hi"})
			}
			resp, out := post(t, s, tt.path, body)
			if resp.StatusCode != tt.status {
				t.Errorf("status = %d, want %d", resp.StatusCode, tt.status)
			}
			for k, v := range tt.headers {
				if got := resp.Header.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
			if diff := cmp.Diff(tt.body, strings.TrimSpace(string(out))); diff != "" {
				t.Errorf("body mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOverloadedTwiceThenSuccess(t *testing.T) {
	s := start(t, &Scenario{Rules: []Rule{
		{Name: "overloaded", Times: 2, Fault: &Fault{Status: 529}},
		{Name: "answer", Reply: []Block{Text("done")}},
	}}, Options{})
	body := msgs(true, nil, user("hi"))
	var statuses []int
	for range 3 {
		resp, _ := post(t, s, "/v1/messages", body)
		statuses = append(statuses, resp.StatusCode)
	}
	type row struct {
		N, Attempt, Status int
		Rule, Fault        string
	}
	var got []row
	for _, r := range s.Requests() {
		got = append(got, row{r.N, r.Attempt, r.Status, r.Rule, r.Fault})
	}
	want := []row{
		{1, 1, 529, "overloaded", "status 529"},
		{2, 2, 529, "overloaded", "status 529"},
		{3, 3, 200, "answer", ""},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("request log mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{529, 529, 200}, statuses); diff != "" {
		t.Errorf("statuses mismatch (-want +got):\n%s", diff)
	}
}

// rawPost sends one keep-alive HTTP/1.1 request over its own TCP connection and reads until
// the server closes it. Returning at all proves the server closed the connection: a
// keep-alive connection that stayed open would block the read until the test's deadline.
func rawPost(t *testing.T, s *Server, path string, body any) string {
	t.Helper()
	b, _ := json.Marshal(body)
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if d, ok := t.Deadline(); ok {
		_ = conn.SetDeadline(d.Add(-time.Second))
	}
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: scripted\r\nConnection: keep-alive\r\nContent-Type: application/json\r\n"+
		"X-Api-Key: k\r\nAnthropic-Version: 2023-06-01\r\nContent-Length: %d\r\n\r\n%s", path, len(b), b)
	out, err := io.ReadAll(conn)
	if err != nil {
		t.Fatalf("connection was not closed by the server: %v", err)
	}
	return string(out)
}

func TestDropMidStream(t *testing.T) {
	s := start(t, &Scenario{Rules: []Rule{
		{Name: "drop", Times: 1, Fault: &Fault{DropAfter: 3}, Reply: []Block{Text("a long answer that is cut")}},
		{Name: "ok", Reply: []Block{Text("whole")}},
	}}, Options{})
	raw := rawPost(t, s, "/v1/messages", msgs(true, nil, user("hi")))
	if n := strings.Count(raw, "event: "); n != 3 {
		t.Errorf("got %d events before the drop, want 3:\n%s", n, raw)
	}
	if strings.Contains(raw, "message_stop") || strings.HasSuffix(raw, "0\r\n\r\n") {
		t.Errorf("dropped stream was finished properly:\n%s", raw)
	}

	// Through a normal client the cut shows up as a read error; the retry then succeeds.
	resp, _ := post(t, s, "/v1/messages", msgs(true, nil, user("hi")))
	if resp.StatusCode != 200 {
		t.Fatalf("retry status %d", resp.StatusCode)
	}
	recs := s.Requests()
	if recs[0].Fault != "drop after 3 events" || recs[1].Rule != "ok" || recs[1].Attempt != 2 {
		t.Errorf("log: %+v", recs)
	}
}

func TestDropSeenByClient(t *testing.T) {
	for _, stream := range []bool{true, false} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			s := start(t, &Scenario{Rules: []Rule{{Fault: &Fault{DropAfter: 2}, Reply: []Block{Text("cut")}}}}, Options{})
			b, _ := json.Marshal(msgs(stream, nil, user("hi")))
			req, _ := http.NewRequestWithContext(t.Context(), "POST", s.URL()+"/v1/messages", bytes.NewReader(b))
			req.Header.Set("x-api-key", "k")
			req.Header.Set("anthropic-version", "2023-06-01")
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				_, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			if err == nil {
				t.Fatal("client saw a complete response")
			}
			if stream && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("stream read error = %v, want unexpected EOF", err)
			}
		})
	}
}

func TestSlowStream(t *testing.T) {
	const delay = 5 * time.Millisecond //keel:duration a pace the stream is slowed to, not a limit
	s := start(t, &Scenario{Rules: []Rule{{Fault: &Fault{Delay: delay}, Reply: []Block{Text("slow")}}}}, Options{})
	began := time.Now()
	_, body := post(t, s, "/v1/messages", msgs(true, nil, user("hi")))
	took := time.Since(began)
	n := strings.Count(string(body), "event: ")
	if min := time.Duration(n) * delay; took < min {
		t.Errorf("%d events took %s, want at least %s", n, took, min)
	}
	if !strings.Contains(string(body), "message_stop") {
		t.Errorf("slow stream incomplete: %s", body)
	}
}

// TestHoldAfter: a stream held after its first events sends those, then waits for the release.
func TestHoldAfter(t *testing.T) {
	hold := make(chan struct{})
	s := start(t, &Scenario{Rules: []Rule{{Fault: &Fault{Hold: hold, HoldAfter: 2}, Reply: []Block{Text("released")}}}}, Options{})
	b, _ := json.Marshal(msgs(true, nil, user("hi")))
	req, _ := http.NewRequestWithContext(t.Context(), "POST", s.URL()+"/v1/messages", bytes.NewReader(b))
	req.Header.Set("x-api-key", "k")
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	before := make(chan []string, 1)
	go func() { // a hold in the wrong place would block this read, so it waits under a limit
		var events []string
		for len(events) < 2 {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Errorf("after %v: %v", events, err)
				break
			}
			if name, ok := strings.CutPrefix(line, "event: "); ok {
				events = append(events, strings.TrimSpace(name))
			}
		}
		before <- events
	}()
	events := waittest.Recv(t, "the events before the hold", before)
	close(hold)
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"message_start", "content_block_start"}, events); diff != "" || !strings.Contains(string(rest), "message_stop") {
		t.Errorf("events before the hold mismatch (-want +got):\n%s\nafter: %s", diff, rest)
	}
}

// TestHold: a held answer is recorded but not sent until the test releases it, streaming or
// not.
func TestHold(t *testing.T) {
	for _, stream := range []bool{true, false} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			hold := make(chan struct{})
			s := start(t, &Scenario{Rules: []Rule{{Fault: &Fault{Hold: hold}, Reply: []Block{Text("released")}}}}, Options{})
			done := make(chan []byte, 1)
			go func() {
				_, body := post(t, s, "/v1/messages", msgs(stream, nil, user("hi")))
				done <- body
			}()
			if _, err := s.WaitRequests(waittest.Context(t), 1); err != nil {
				t.Fatal(err)
			}
			select {
			case body := <-done:
				t.Fatalf("answered while held: %s", body)
			default:
			}
			close(hold)
			want := `"text":"released"`
			if stream {
				want = "message_stop"
			}
			if body := waittest.Recv(t, "the released answer", done); !strings.Contains(string(body), want) {
				t.Errorf("released answer lacks %s: %s", want, body)
			}
		})
	}
}
