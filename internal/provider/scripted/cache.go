package scripted

import (
	"crypto/sha256"
	"encoding/binary"
	"time"
)

// CacheAccount is the prompt-cache arithmetic of one request. Token counts follow the
// package's approximation (see the package doc): InputTokens = CacheReadTokens +
// CacheCreationTokens + UncachedTokens.
type CacheAccount struct {
	Model string
	// Breakpoints is the number of cache_control breakpoints in the request (Anthropic only).
	Breakpoints int
	// InputTokens is the whole prompt: tools, system and messages.
	InputTokens int
	// CacheReadTokens were read from the cache (cache_read_input_tokens, or cached_tokens for
	// chat completions).
	CacheReadTokens int
	// CacheCreationTokens were written (cache_creation_input_tokens), split by TTL below.
	CacheCreationTokens int
	CacheCreation5m     int
	CacheCreation1h     int
	// UncachedTokens were neither read nor written (the API's input_tokens).
	UncachedTokens int
	// SharedPrefixTokens is the length of the longest block prefix this request shares with
	// any earlier accounted request to the same API and model, whether or not it was cached.
	// CacheReadTokens / SharedPrefixTokens is the share of reusable tokens the cache served.
	SharedPrefixTokens int
}

type cacheEntry struct {
	expires time.Time
	ttl     time.Duration
}

// promptCache holds cache entries and the prefixes seen so far. It is not safe for concurrent
// use; the Server guards it with its mutex.
type promptCache struct {
	entries map[[32]byte]cacheEntry
	seen    map[[32]byte]bool
}

func newPromptCache() *promptCache {
	return &promptCache{entries: map[[32]byte]cacheEntry{}, seen: map[[32]byte]bool{}}
}

// prefixes returns, for every block position i (0..len(blocks)), the hash of the prefix of i
// blocks and its cumulative token count. The seed (API and model) makes the cache per model.
func prefixes(seed string, blocks []cacheBlock) ([][32]byte, []int) {
	hs := make([][32]byte, len(blocks)+1)
	cum := make([]int, len(blocks)+1)
	hs[0] = sha256.Sum256([]byte(seed))
	for i, b := range blocks {
		h := sha256.New()
		h.Write(hs[i][:])
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(b.tag)))
		h.Write(n[:])
		h.Write([]byte(b.tag))
		h.Write(b.canon)
		copy(hs[i+1][:], h.Sum(nil))
		cum[i+1] = cum[i] + b.tokens
	}
	return hs, cum
}

func (c *promptCache) live(h [32]byte, now time.Time) (cacheEntry, bool) {
	e, ok := c.entries[h]
	if !ok {
		return e, false
	}
	if !now.Before(e.expires) {
		delete(c.entries, h)
		return e, false
	}
	return e, true
}

// shared returns the tokens of the longest prefix already seen, and with commit records this
// request's prefixes.
func (c *promptCache) shared(hs [][32]byte, cum []int, commit bool) int {
	best := 0
	for i := 1; i < len(hs); i++ {
		if c.seen[hs[i]] {
			best = cum[i]
		}
	}
	if commit {
		for i := 1; i < len(hs); i++ {
			c.seen[hs[i]] = true
		}
	}
	return best
}

// anthropic accounts a Messages API request following Anthropic's documented rules: the prefix
// runs tools → system → messages; entries are written only at cache_control breakpoints whose
// prefix reaches the minimum length; each breakpoint looks for an earlier entry at its own
// position and the positions before it, Lookback positions in all; a hit refreshes the entry's
// TTL. Without commit (a request answered with an error status) nothing is read or written.
func (c *promptCache) anthropic(now time.Time, cfg CacheConfig, model string, blocks []cacheBlock, commit bool) CacheAccount {
	hs, cum := prefixes("anthropic\x00"+model, blocks)
	n := len(blocks)
	acc := CacheAccount{Model: model, InputTokens: cum[n]}
	acc.SharedPrefixTokens = c.shared(hs, cum, commit)
	var bps []int // positions (prefix lengths in blocks) of the breakpoints
	for i, b := range blocks {
		if b.bp != nil {
			bps = append(bps, i+1)
		}
	}
	acc.Breakpoints = len(bps)
	if !commit {
		acc.UncachedTokens = acc.InputTokens
		return acc
	}
	hit := 0
	for _, pos := range bps {
		for p := pos; p > 0 && p > pos-cfg.lookback(); p-- {
			if _, ok := c.live(hs[p], now); ok {
				hit = max(hit, p)
				break
			}
		}
	}
	if hit > 0 {
		e := c.entries[hs[hit]]
		e.expires = now.Add(e.ttl)
		c.entries[hs[hit]] = e
	}
	acc.CacheReadTokens = cum[hit]
	from := hit
	for _, pos := range bps {
		bp := blocks[pos-1].bp
		if cum[pos] < cfg.minTokens() {
			continue
		}
		if pos <= hit {
			// A breakpoint inside the part read from the cache costs nothing; keep its entry
			// so later requests can fall back to it.
			if e, ok := c.live(hs[pos], now); !ok || e.ttl < bp.ttl {
				c.entries[hs[pos]] = cacheEntry{expires: now.Add(bp.ttl), ttl: bp.ttl}
			}
			continue
		}
		seg := cum[pos] - cum[from]
		if bp.ttl >= time.Hour {
			acc.CacheCreation1h += seg
		} else {
			acc.CacheCreation5m += seg
		}
		from = pos
		c.entries[hs[pos]] = cacheEntry{expires: now.Add(bp.ttl), ttl: bp.ttl}
	}
	acc.CacheCreationTokens = acc.CacheCreation5m + acc.CacheCreation1h
	acc.UncachedTokens = cum[n] - cum[from]
	return acc
}

// openAITTL is how long an automatic chat-completions prefix entry lives without use.
const openAITTL = 5 * time.Minute

// openai accounts a chat-completions request with automatic prefix caching: every prefix at a
// block boundary that reaches the minimum length is cached, and the longest live one is read.
// Chat completions report only cached_tokens, so nothing counts as created.
func (c *promptCache) openai(now time.Time, cfg CacheConfig, model string, blocks []cacheBlock, commit bool) CacheAccount {
	hs, cum := prefixes("openai\x00"+model, blocks)
	n := len(blocks)
	acc := CacheAccount{Model: model, InputTokens: cum[n]}
	acc.SharedPrefixTokens = c.shared(hs, cum, commit)
	if !commit {
		acc.UncachedTokens = acc.InputTokens
		return acc
	}
	hit := 0
	for p := n; p > 0; p-- {
		if _, ok := c.live(hs[p], now); ok && cum[p] >= cfg.minTokens() {
			hit = p
			break
		}
	}
	for p := 1; p <= n; p++ {
		if cum[p] >= cfg.minTokens() {
			c.entries[hs[p]] = cacheEntry{expires: now.Add(openAITTL), ttl: openAITTL}
		}
	}
	acc.CacheReadTokens = cum[hit]
	acc.UncachedTokens = cum[n] - cum[hit]
	return acc
}
