package coordpipe

import (
	"context"
	"encoding/json"
	"time"

	"github.com/keel-dev/keel/internal/coord"
)

type board struct{ c *Client }

func (b board) Create(ctx context.Context, t coord.Task) (coord.Task, error) {
	return do[coord.Task](ctx, b.c, opBoardCreate, &args{Task: &t})
}

func (b board) Get(ctx context.Context, id string) (coord.Task, error) {
	return do[coord.Task](ctx, b.c, opBoardGet, &args{ID: id})
}

func (b board) List(ctx context.Context) ([]coord.Task, error) {
	return do[[]coord.Task](ctx, b.c, opBoardList, nil)
}

func (b board) Update(ctx context.Context, id string, ch coord.TaskChange) (coord.Task, error) {
	return do[coord.Task](ctx, b.c, opBoardUpdate, &args{ID: id, Change: &ch})
}

func (b board) Delete(ctx context.Context, id string) error {
	return b.c.exec(ctx, opBoardDelete, &args{ID: id})
}

func (b board) Claim(ctx context.Context, id, owner string, lease time.Duration) (coord.Task, error) {
	return do[coord.Task](ctx, b.c, opBoardClaim, &args{ID: id, Owner: owner, Lease: lease})
}

func (b board) ClaimNext(ctx context.Context, owner string, lease time.Duration) (coord.Task, error) {
	return do[coord.Task](ctx, b.c, opBoardClaimNext, &args{Owner: owner, Lease: lease})
}

func (b board) Renew(ctx context.Context, id, owner string, lease time.Duration) (coord.Task, error) {
	return do[coord.Task](ctx, b.c, opBoardRenew, &args{ID: id, Owner: owner, Lease: lease})
}

func (b board) Release(ctx context.Context, id, owner string) (coord.Task, error) {
	return do[coord.Task](ctx, b.c, opBoardRelease, &args{ID: id, Owner: owner})
}

func (b board) Watch(ctx context.Context) (<-chan struct{}, error) {
	return b.c.watch(ctx, opBoardWatch, nil)
}

type mailbox struct{ c *Client }

func (m mailbox) Send(ctx context.Context, msg coord.Message) error {
	return m.c.exec(ctx, opMailSend, &args{Msg: &msg})
}

func (m mailbox) Fetch(ctx context.Context, member string, max int) ([]coord.Message, error) {
	return do[[]coord.Message](ctx, m.c, opMailFetch, &args{Member: member, Max: max})
}

func (m mailbox) Ack(ctx context.Context, member string, ids ...string) error {
	return m.c.exec(ctx, opMailAck, &args{Member: member, IDs: ids})
}

func (m mailbox) Watch(ctx context.Context, member string) (<-chan struct{}, error) {
	return m.c.watch(ctx, opMailWatch, &args{Member: member})
}

func (m mailbox) Delivered(ctx context.Context, member string, limit int) ([]coord.Message, error) {
	return do[[]coord.Message](ctx, m.c, opMailDelivered, &args{Member: member, Max: limit})
}

type requests struct{ c *Client }

func (r requests) Submit(ctx context.Context, req coord.Request) error {
	return r.c.exec(ctx, opReqSubmit, &args{Req: &req})
}

func (r requests) Pending(ctx context.Context, to string) ([]coord.Request, error) {
	return do[[]coord.Request](ctx, r.c, opReqPending, &args{To: to})
}

func (r requests) Resolve(ctx context.Context, id string, res coord.Resolution) error {
	return r.c.exec(ctx, opReqResolve, &args{ID: id, Res: &res})
}

func (r requests) Resolution(ctx context.Context, id string) (coord.Resolution, error) {
	return do[coord.Resolution](ctx, r.c, opReqResolution, &args{ID: id})
}

func (r requests) Watch(ctx context.Context) (<-chan struct{}, error) {
	return r.c.watch(ctx, opReqWatch, nil)
}

type records struct{ c *Client }

func (r records) Put(ctx context.Context, key string, value json.RawMessage) (uint64, error) {
	return do[uint64](ctx, r.c, opRecPut, &args{Key: key, Value: value})
}

func (r records) Create(ctx context.Context, key string, value json.RawMessage) (uint64, error) {
	return do[uint64](ctx, r.c, opRecCreate, &args{Key: key, Value: value})
}

func (r records) Update(ctx context.Context, key string, value json.RawMessage, rev uint64) (uint64, error) {
	return do[uint64](ctx, r.c, opRecUpdate, &args{Key: key, Value: value, Rev: rev})
}

func (r records) Get(ctx context.Context, key string) (coord.Record, error) {
	return do[coord.Record](ctx, r.c, opRecGet, &args{Key: key})
}

func (r records) List(ctx context.Context, prefix string) ([]coord.Record, error) {
	return do[[]coord.Record](ctx, r.c, opRecList, &args{Key: prefix})
}

func (r records) Delete(ctx context.Context, key string) error {
	return r.c.exec(ctx, opRecDelete, &args{Key: key})
}

func (r records) Watch(ctx context.Context, prefix string) (<-chan struct{}, error) {
	return r.c.watch(ctx, opRecWatch, &args{Key: prefix})
}

type events struct{ c *Client }

func (e events) Append(ctx context.Context, member string, data ...json.RawMessage) error {
	bs := make([][]byte, len(data))
	for i, d := range data {
		bs[i] = d
	}
	return e.c.exec(ctx, opEventsAppend, &args{Member: member, Data: bs})
}

func (e events) Read(ctx context.Context, member string, after uint64, max int) ([]coord.Entry, error) {
	return do[[]coord.Entry](ctx, e.c, opEventsRead, &args{Member: member, After: after, Max: max})
}

func (e events) Last(ctx context.Context, member string) (uint64, error) {
	return do[uint64](ctx, e.c, opEventsLast, &args{Member: member})
}

func (e events) Watch(ctx context.Context, member string) (<-chan struct{}, error) {
	return e.c.watch(ctx, opEventsWatch, &args{Member: member})
}
