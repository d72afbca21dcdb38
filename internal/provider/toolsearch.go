package provider

// NativeToolSearcher is a provider whose API loads deferred tools itself: it sends tools with
// [ToolSpec.DeferLoading] by name only, with a server-side search tool the model uses to load
// them, so the caller needs no search tool of its own. A provider without it gets every tool
// in full (the caller defers with its own ToolSearch tool instead).
type NativeToolSearcher interface {
	NativeToolSearch() bool
}

// Unwrapper is a provider that wraps another ([WithRetries] does), so capabilities of the inner
// provider stay visible.
type Unwrapper interface {
	Unwrap() Provider
}

// SupportsNativeToolSearch reports whether p, or a provider it wraps, has native deferred
// tool loading.
func SupportsNativeToolSearch(p Provider) bool {
	for p != nil {
		if n, ok := p.(NativeToolSearcher); ok {
			return n.NativeToolSearch()
		}
		u, ok := p.(Unwrapper)
		if !ok {
			return false
		}
		p = u.Unwrap()
	}
	return false
}

// ServerWebSearcher is a provider whose API runs web searches itself, through a server tool
// in the request (Anthropic's web_search), returning the results and cited answers as
// content blocks.
type ServerWebSearcher interface {
	ServerWebSearch() bool
}

// SupportsServerWebSearch reports whether p, or a provider it wraps, runs web searches
// server-side.
func SupportsServerWebSearch(p Provider) bool {
	for p != nil {
		if s, ok := p.(ServerWebSearcher); ok {
			return s.ServerWebSearch()
		}
		u, ok := p.(Unwrapper)
		if !ok {
			return false
		}
		p = u.Unwrap()
	}
	return false
}
