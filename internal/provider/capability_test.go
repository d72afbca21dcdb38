package provider

import (
	"context"
	"iter"
	"testing"
)

// able is a provider with a server-side tool search and a helper model of its own.
type able struct{}

func (able) Stream(context.Context, *Request) iter.Seq2[Event, error] { return nil }
func (able) NativeToolSearch() string                                 { return "server_search" }
func (able) HelperModel() string                                      { return "small-1" }

type plain struct{}

func (plain) Stream(context.Context, *Request) iter.Seq2[Event, error] { return nil }

// Capabilities show through a retrying wrapper; a provider without them has none.
func TestCapabilitiesThroughWrappers(t *testing.T) {
	wrapped := WithRetries(able{}, RetryPolicy{}, nil)
	if got := NativeToolSearch(wrapped); got != "server_search" || !SupportsNativeToolSearch(wrapped) {
		t.Errorf("NativeToolSearch = %q", got)
	}
	if got := HelperModel(wrapped); got != "small-1" {
		t.Errorf("HelperModel = %q", got)
	}
	if NativeToolSearch(plain{}) != "" || HelperModel(WithRetries(plain{}, RetryPolicy{}, nil)) != "" {
		t.Error("a provider without the abilities reports them")
	}
}
