package webfetch

import (
	"container/list"
	"sync"
	"time"
)

// cache keeps fetched pages for a short while, so asking several questions about one page
// fetches it once. It is bounded by the size of the pages it holds; the least recently used
// go first.
type cache struct {
	ttl   time.Duration
	limit int64
	now   func() time.Time

	// mu guards order, byKey and size.
	mu    sync.Mutex
	order *list.List // of *entry, most recently used first
	byKey map[string]*list.Element
	size  int64
}

type entry struct {
	key     string
	page    Page
	fetched time.Time
}

func newCache(ttl time.Duration, limit int64, now func() time.Time) *cache {
	return &cache{ttl: ttl, limit: limit, now: now, order: list.New(), byKey: map[string]*list.Element{}}
}

// get returns a fresh copy of the page for key. A page that came from a private address is
// served only to a caller allowed to reach it.
func (c *cache) get(key string, allowPrivate bool) (*Page, bool) {
	if c.ttl < 0 {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[key]
	if !ok {
		return nil, false
	}
	e := el.Value.(*entry)
	if c.now().Sub(e.fetched) >= c.ttl {
		c.remove(el)
		return nil, false
	}
	if e.page.Private && !allowPrivate {
		return nil, false
	}
	c.order.MoveToFront(el)
	p := e.page
	p.Cached = true
	return &p, true
}

func (c *cache) put(key string, p *Page) {
	size := int64(len(p.Content))
	if c.ttl < 0 || size > c.limit {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok {
		c.remove(el)
	}
	c.byKey[key] = c.order.PushFront(&entry{key: key, page: *p, fetched: c.now()})
	c.size += size
	for c.size > c.limit {
		c.remove(c.order.Back())
	}
}

func (c *cache) remove(el *list.Element) {
	e := c.order.Remove(el).(*entry)
	delete(c.byKey, e.key)
	c.size -= int64(len(e.page.Content))
}
