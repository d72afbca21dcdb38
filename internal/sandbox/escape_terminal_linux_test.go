package sandbox_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/keel-dev/keel/internal/procgroup"
	"github.com/keel-dev/keel/internal/sandbox"
	"github.com/keel-dev/keel/internal/waittest"
	"golang.org/x/sys/unix"
)

// terminalProbe tries what a command could do with keel's terminal: open it as /dev/tty,
// write an escape sequence to it past keel (OSC 52 sets the clipboard), and take its
// foreground to read what the user types. argv[1] names the run in what it writes.
const terminalProbe = `import errno, os, signal, sys
for s in (signal.SIGTTOU, signal.SIGTTIN, signal.SIGTSTP):
    signal.signal(s, signal.SIG_IGN)
mode = sys.argv[1]
try:
    fd = os.open("/dev/tty", os.O_RDWR)
except OSError as e:
    print("tty:", errno.errorcode[e.errno])
else:
    print("tty: opened")
    os.write(fd, b"\x1b]52;c;ZWNobyBwd25lZA==\x07FROM-SANDBOX-" + mode.encode() + b"\r\n")
    try:
        os.setpgid(0, 0)
    except OSError:
        pass
    try:
        os.tcsetpgrp(fd, os.getpgrp())
        print("tcsetpgrp: taken")
    except OSError as e:
        print("tcsetpgrp:", errno.errorcode[e.errno])
print("stdout reaches keel")
`

// terminalKeelEnv makes TestTerminalKeel play keel at a terminal, with the launcher it names.
const terminalKeelEnv = "KEEL_TEST_TERMINAL_KEEL"

// TestEscapeTerminal: keel runs at a terminal (a pty here, its controlling terminal); a
// command it runs in the sandbox — as the Bash tool does, stdin not the terminal — cannot open
// the terminal (ENXIO: a session of its own, without one), so it can neither write escape
// sequences to it past keel nor take its foreground and read what the user types. Its output
// still reaches keel. A command the user runs at their own terminal (keel sandbox -- CMD,
// ConfineAtTerminal) keeps it.
func TestEscapeTerminal(t *testing.T) { forEachLauncher(t, testEscapeTerminal) }

func testEscapeTerminal(t *testing.T) {
	if _, err := os.Stat(python); err != nil {
		t.Skipf("the probe is in Python, which this machine lacks: %v", err)
	}
	newWorld(t, nil) // skips where the sandbox cannot run
	master, slave := openPty(t)
	var screen bytes.Buffer
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		io.Copy(&screen, master) // ends with EIO once no one holds the terminal
	}()
	keel := exec.Command(os.Args[0], "-test.run=^TestTerminalKeel$", "-test.v", "-test.count=1")
	keel.Env = append(os.Environ(), terminalKeelEnv+"="+forcedLauncher)
	keel.Stdin = slave
	var out bytes.Buffer
	keel.Stdout, keel.Stderr = &out, &out
	keel.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	err := keel.Run()
	slave.Close()
	<-drained
	if err != nil {
		t.Fatalf("keel at the terminal failed: %v\n%s", err, out.String())
	}
	tool, atTerminal, _ := strings.Cut(out.String(), "AT-TERMINAL")
	for _, want := range []string{"tty: ENXIO", "stdout reaches keel"} {
		if !strings.Contains(tool, want) {
			t.Errorf("the Bash tool's command: output lacks %q:\n%s", want, tool)
		}
	}
	if strings.Contains(tool, "tty: opened") || strings.Contains(tool, "tcsetpgrp: taken") {
		t.Errorf("the Bash tool's command reached keel's terminal:\n%s", tool)
	}
	if strings.Contains(screen.String(), "FROM-SANDBOX-tool") {
		t.Errorf("the Bash tool's command wrote to keel's terminal: %q", screen.String())
	}
	// The control: the terminal shows what a command there writes, and keeps working for one
	// the user runs at it.
	if !strings.Contains(atTerminal, "tty: opened") || !strings.Contains(screen.String(), "FROM-SANDBOX-terminal") {
		t.Errorf("a command run at the user's terminal lost it:\n%s\nterminal: %q", atTerminal, screen.String())
	}
}

// TestTerminalKeel is keel at a terminal for TestEscapeTerminal, which starts it (in a test
// binary of its own) with a pty as its controlling terminal.
func TestTerminalKeel(t *testing.T) {
	launcher := os.Getenv(terminalKeelEnv)
	if launcher == "" {
		t.Skip("TestEscapeTerminal runs this as keel at a terminal")
	}
	sandbox.ForceLauncher(t, launcher)
	forcedLauncher = launcher
	w := newWorld(t, nil)
	write(t, filepath.Join(w.ws, "probe.py"), terminalProbe)
	fmt.Println(w.run(t, python+" probe.py tool"))
	fmt.Println("AT-TERMINAL")
	cmd := exec.Command(python, "probe.py", "terminal")
	cmd.Dir, cmd.Stdin = w.ws, os.Stdin
	run, err := w.s.ConfineAtTerminal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	b, err := cmd.CombinedOutput()
	run.Release()
	fmt.Println(string(b), err)
}

// openPty opens a new pseudo-terminal: its master and its slave, closed with the test.
func openPty(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock the pty: %v", err)
	}
	n, err := unix.IoctlGetUint32(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("name the pty: %v", err)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open the pty's slave: %v", err)
	}
	t.Cleanup(func() { slave.Close() })
	return master, slave
}

// TestSandboxedSessionKilledWhole: a sandboxed command leads a session of its own — and so a
// process group, with procgroup.Own as the Bash tool starts it — and Run.Kill of that group
// still ends everything it started.
func TestSandboxedSessionKilledWhole(t *testing.T) {
	forEachLauncher(t, testSandboxedSessionKilledWhole)
}

func testSandboxedSessionKilledWhole(t *testing.T) {
	w := newWorld(t, nil)
	cmd := exec.Command("sh", "-c", "sleep 600 & echo started; wait")
	cmd.Dir = w.ws
	run, err := w.s.Confine(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Release()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	procgroup.Own(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if line != "started\n" {
		t.Fatalf("the command did not start: %q %v", line, err)
	}
	pid := cmd.Process.Pid
	if sid, err := unix.Getsid(pid); err != nil || sid != pid {
		t.Errorf("the sandboxed command is not in a session of its own: session %d (%v), pid %d", sid, err, pid)
	}
	if pgid, err := unix.Getpgid(pid); err != nil || pgid != pid {
		t.Errorf("the sandboxed command does not lead its process group: %d (%v), pid %d", pgid, err, pid)
	}
	if err := run.Kill(pid); err != nil && !errors.Is(err, syscall.ESRCH) {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil {
		t.Fatal("the killed command exited 0")
	}
	if err := procgroup.Wait(waittest.Context(t), pid); err != nil {
		t.Errorf("the command's process group outlived the kill: %v", err)
	}
}
