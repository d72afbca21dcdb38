package sandbox_test

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/keel-dev/keel/internal/sandbox"
	"golang.org/x/sys/unix"
)

// socketpairProbe tries, for each AF_UNIX socket pair type, to connect one end of a pair to
// the datagram socket named by argv[1] and send to it; a stream pair must still work inside
// and must not connect anywhere else, here the stream socket named by argv[2].
const socketpairProbe = `import errno, socket, sys
target = sys.argv[1]
print("socket", end=": ")
try:
    socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    print("ESCAPED")
except OSError as e:
    print("refused", errno.errorcode[e.errno])
for name, kind in [("dgram", socket.SOCK_DGRAM), ("dgram-flags", socket.SOCK_DGRAM | socket.SOCK_NONBLOCK | socket.SOCK_CLOEXEC),
                   ("seqpacket", socket.SOCK_SEQPACKET), ("raw", socket.SOCK_RAW)]:
    print(name, end=": ")
    try:
        a, b = socket.socketpair(socket.AF_UNIX, kind)
    except OSError as e:
        print("refused", errno.errorcode[e.errno])
        continue
    try:
        a.connect(target)
        a.send(b"FROM-SANDBOX-" + name.encode())
        print("ESCAPED")
    except OSError as e:
        print("pair made, connect failed", errno.errorcode[e.errno])
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
a.sendall(b"ping")
print("stream:", b.recv(4).decode(), end=" ")
try:
    a.connect(sys.argv[2])
    print("ESCAPED")
except OSError as e:
    print(errno.errorcode[e.errno])
`

// TestEscapeUnixSocketpair: socket() refuses AF_UNIX, and so must socketpair() for every type
// but SOCK_STREAM — a datagram pair's socket may be connected again, to any path-named
// datagram socket outside (journald, a daemon's control socket) — whatever flags ride on the
// type. A stream pair (shells, Python's subprocess plumbing) still works, and cannot connect
// elsewhere (EISCONN).
func TestEscapeUnixSocketpair(t *testing.T) { forEachLauncher(t, testEscapeUnixSocketpair) }

func testEscapeUnixSocketpair(t *testing.T) {
	if _, err := os.Stat(python); err != nil {
		t.Skipf("the probe is in Python, which this machine lacks: %v", err)
	}
	sock := filepath.Join(sandbox.VisibleDir(t), "d.sock")
	srv, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	stream, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock + "-stream", Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	w := newWorld(t, nil)
	write(t, filepath.Join(w.ws, "probe.py"), socketpairProbe)
	out := w.run(t, python+" probe.py "+sock+" "+sock+"-stream")
	for _, want := range []string{"socket: refused EPERM", "dgram: refused EPERM", "dgram-flags: refused EPERM",
		"seqpacket: refused EPERM", "raw: refused EPERM", "stream: ping EISCONN"} {
		if !strings.Contains(out, want) {
			t.Errorf("the probe's output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "ESCAPED") {
		t.Errorf("a socket inside reached the datagram socket outside:\n%s", out)
	}
	// The command has ended: whatever it sent is queued on the server's socket by now.
	rc, err := srv.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	rc.Read(func(fd uintptr) bool {
		buf := make([]byte, 128)
		for {
			n, _, err := unix.Recvfrom(int(fd), buf, unix.MSG_DONTWAIT)
			if err != nil {
				if err != syscall.EAGAIN {
					t.Errorf("read the datagram socket: %v", err)
				}
				return true
			}
			got = append(got, string(buf[:n]))
		}
	})
	if len(got) > 0 {
		t.Errorf("the datagram socket outside received from the sandbox: %q", got)
	}
	if rc, err = stream.SyscallConn(); err != nil {
		t.Fatal(err)
	}
	rc.Read(func(fd uintptr) bool {
		if nfd, _, err := unix.Accept4(int(fd), unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK); err == nil {
			unix.Close(nfd)
			t.Error("the stream socket outside was connected to from the sandbox")
		}
		return true
	})
}
