package provider

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"
)

// StatusFromResponse reads the error response of a model API (status 300 or more) into a
// StatusError: the error body both the Messages API and chat completions use
// ({"error":{"type","message"}}, plain text otherwise), the request id, retry-after and
// x-should-retry. It closes the body. The adapter adds its Hint.
func StatusFromResponse(providerName string, resp *http.Response, requestIDHeader string, now time.Time) *StatusError {
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var body struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	se := &StatusError{Provider: providerName, StatusCode: resp.StatusCode, RequestID: resp.Header.Get(requestIDHeader)}
	if json.Unmarshal(data, &body) == nil && body.Error.Message != "" {
		se.Type, se.Message = body.Error.Type, body.Error.Message
	} else {
		se.Message = strings.TrimSpace(string(data))
	}
	se.After, _ = ParseRetryAfter(resp.Header, now)
	switch resp.Header.Get("x-should-retry") {
	case "true":
		se.ShouldRetry = new(true)
	case "false":
		se.ShouldRetry = new(false)
	}
	return se
}
