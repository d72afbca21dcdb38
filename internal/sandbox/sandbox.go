package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/keel-dev/keel/internal/companion"
)

// ErrUnavailable wraps every reason a sandbox cannot start on this machine.
var ErrUnavailable = errors.New("sandbox unavailable")

// ErrLimited is what [Options.Unavailable] is told when the sandbox runs, but only in the
// Landlock-only fallback: user namespaces are blocked here, so commands are confined by
// Landlock, seccomp and no_new_privs alone, and the error says what that leaves open.
var ErrLimited = errors.New("sandbox limited")

// Proxy serves the connections a sandboxed command opens to keel's egress proxy. deny is
// called with each host the proxy refused, so the command's result can name it.
type Proxy interface {
	ServeConn(ctx context.Context, conn net.Conn, deny func(host, why string))
}

// Options are what a [Sandbox] needs besides its policy.
type Options struct {
	// Executable is the program re-executed as the helper; empty is this one when it called
	// [Dispatch], else a keel beside it or on PATH.
	Executable string
	// Proxy serves the sandbox's network; nil refuses every connection.
	Proxy Proxy
	// Unavailable, when set, is told once why the sandbox cannot start here (the first time
	// [Sandbox.Available] finds out): the session shows it to the user, once. It is also
	// told, with an error wrapping [ErrLimited], when the sandbox starts only in its weaker
	// Landlock-only form; Available is then nil.
	Unavailable func(error)
}

// Sandbox is one session's sandbox: its policy and the means to start commands under it. It
// is safe for concurrent use; commands run under it in parallel.
type Sandbox struct {
	policy Policy
	exe    string
	exeErr error
	// exeFile holds exe open: the helper is executed from it ([openHelper]).
	exeFile *os.File
	proxy   Proxy
	// proxyConns counts the connections all its commands hold to their proxies.
	proxyConns connSlots

	unavailable func(error)
	// probeMu guards the probe; probed says its answer, probeErr, is kept.
	probeMu  sync.Mutex
	probed   bool
	probeErr error
	// landlockOnly is set by the probe when user namespaces are blocked but Landlock works:
	// commands then run in the Landlock-only fallback.
	landlockOnly bool
	// limited says what the sandbox cannot do in its weaker form; empty in its full form.
	limited string
	// bwrap is the bubblewrap that sets up the namespaces when the probe chose it (empty:
	// keel's own helper does); bwrapVersion its version, bwrapWhy why it was not chosen (for
	// `keel doctor`).
	bwrap, bwrapVersion, bwrapWhy string
	// cachesWhy says why the toolchain caches are bound writable, not overlaid ([overlay]),
	// as the probe found; empty when they are overlays (or there are none).
	cachesWhy string
	// helperMounts says the overlays' probe saw the helper mount under bubblewrap, with the
	// capability bubblewrap leaves it: only then does it bind the placeholders and pin the
	// directories bubblewrap would ([plan.Held], [plan.HelperPins]) — where a security module
	// denies the helper that capability (Ubuntu's profile for bubblewrap can), bubblewrap binds
	// them all as before.
	helperMounts bool

	// full is policy completed by the first command or doctor (complete), completed again
	// when a command made a repository (refresh); nil until then.
	completeOnce sync.Once
	full         atomic.Pointer[Policy]
	// refreshMu keeps refreshes in order, so that an older search never replaces a newer one.
	refreshMu sync.Mutex
	// disarmMu guards watches, the commands running now as their repository watches know
	// them, and keeps runs released together from disarming the same repository at once.
	disarmMu sync.Mutex
	watches  map[*plantWatch]bool
	// gitlinks are the submodule paths in each watched gitdir's index, listed at its first
	// release and again whenever the index changed.
	gitlinks map[string][]string
	// verified holds, per gitdir disarm last looked at, its gitFingerprint after.
	verified map[string]string
	// cwd is the directory the session's shell is in, as the last command left it
	// ([Sandbox.Entered]).
	cwd string
	// refsSeen holds, per protected repository, its refs as last read ([plantWatch.noteRefs]).
	refsSeen map[string]refsMark
	// objSeen holds, per guarded object store, its files as last checked
	// ([plantWatch.noteObjects]).
	objSeen map[string]objStore
	// links are the links on the way to read-only and masked paths as they were while no
	// command ran ([plantWatch.noteLinks]), made again when a command replaces one.
	links map[string]linkMark
	// objs are the hidings of masked files' blobs in the object stores ([Sandbox.objectMasks]).
	objs objMasks
	// madeBoundSaid says a command's result told that the search stopped at a bound, past
	// which the project configuration a command makes stays ([plantWatch.refuseMade]).
	madeBoundSaid bool

	// mu guards placeholders: how many running commands share each placeholder keel made
	// for an absent always-read-only path; the last one removes it.
	mu           sync.Mutex
	placeholders map[string]int
	// placeholderFiles hold each placeholder open with a shared flock (see hold).
	placeholderFiles map[string]*os.File
}

// New returns the sandbox of policy p. Nothing is started, probed or searched until the first
// command.
func New(p Policy, opts Options) *Sandbox {
	s := &Sandbox{policy: p, proxy: opts.Proxy, proxyConns: connSlots{max: maxProxyConns}, exe: opts.Executable, unavailable: opts.Unavailable, placeholders: map[string]int{}, placeholderFiles: map[string]*os.File{}, watches: map[*plantWatch]bool{}, gitlinks: map[string][]string{}, verified: map[string]string{}, refsSeen: map[string]refsMark{}, objSeen: map[string]objStore{}}
	if s.exe == "" {
		s.exe, s.exeErr = helperExecutable()
	}
	if s.exeErr == nil {
		s.exeFile, s.exeErr = openHelper(s.exe)
	}
	s.guardHost(s.exe)
	return s
}

// Policy returns the sandbox's policy: complete once a command has been confined (or
// [Doctor] has run), until then as it was given — its switches and what the settings
// name, without what the search of the writable roots adds ([Policy.Complete]) — so asking
// it never costs that search.
func (s *Sandbox) Policy() Policy {
	if p := s.full.Load(); p != nil {
		return *p
	}
	return s.policy
}

// complete is the policy commands run under: the given one completed, once.
func (s *Sandbox) complete() Policy {
	s.completeOnce.Do(func() {
		full := s.policy.Complete()
		s.full.Store(&full)
		// Where the protection is incomplete, the log says so too, not only `keel doctor`.
		for _, w := range full.Warnings {
			slog.Warn("sandbox: protection incomplete", "why", w)
		}
	})
	return *s.full.Load()
}

// refresh completes the policy again, for the commands that start from now on: a command
// made a repository, whose configuration and hooks are then read-only like the others'.
func (s *Sandbox) refresh() {
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	full := s.policy.Complete()
	if old := s.full.Load(); old != nil {
		// What was read-only or masked stays so, where it was resolved: a link a running
		// command replaced (made again at its release, linkwatch.go) may have led this
		// resolution elsewhere, away from the real file.
		for _, r := range old.ReadOnly {
			if _, err := os.Lstat(r); err == nil && !slices.Contains(full.ReadOnly, r) {
				full.ReadOnly = append(full.ReadOnly, r)
			}
		}
		for _, m := range old.Masked {
			if !slices.Contains(full.Masked, m) {
				full.Masked = append(full.Masked, m)
			}
		}
	}
	s.full.Store(&full)
}

// HelperProgram is the sandbox's own helper program (cmd/keel-sandbox): installed beside
// keel, it is what keel starts for each command, since it links only this package and starts
// several milliseconds sooner than keel itself.
const HelperProgram = "keel-sandbox"

// helperExecutable is the program that can be the helper: keel-sandbox beside this program
// (never one found elsewhere, which may be of another version), else this one when it called
// Dispatch, else a keel beside it or on PATH.
func helperExecutable() (string, error) {
	if p, ok := companion.Beside(HelperProgram); ok {
		return p, nil
	}
	if dispatching.Load() {
		return os.Executable()
	}
	return companion.Find("keel")
}

// Available reports whether commands can run in the sandbox here: nil, or an error wrapping
// [ErrUnavailable] that says what is missing and how to fix it. The first call starts a
// trivial command in the sandbox; the answer is kept — unless it wraps [ErrBusy]: a limit
// that was full then says nothing about the machine, and the next call probes again.
func (s *Sandbox) Available() error {
	s.probeMu.Lock()
	defer s.probeMu.Unlock()
	if s.probed {
		return s.probeErr
	}
	err := s.probe()
	if errors.Is(err, ErrBusy) {
		return err
	}
	s.probed, s.probeErr = true, err
	if s.unavailable == nil {
		return err
	}
	limited := s.limited
	if c := s.cachesNotice(); c != "" && limited != "" {
		limited += "; " + c
	} else if c != "" {
		limited = c
	}
	if err != nil {
		s.unavailable(err)
	} else if limited != "" {
		s.unavailable(fmt.Errorf("%w: %s", ErrLimited, limited))
	}
	return err
}
