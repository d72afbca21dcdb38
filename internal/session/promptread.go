package session

import (
	"os"
	"path/filepath"

	"github.com/keel-dev/keel/internal/memory"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/runconfig"
	"github.com/keel-dev/keel/internal/sandbox"
	"github.com/keel-dev/keel/internal/settings"
)

// promptReadRefusal is what keel asks before it reads a file into a prompt by itself — a
// memory file or its @include, a skill's @file mention — rather than through a Read call the
// permission rules decide: why a Read deny or ask rule covers the file (the checker's own
// answer, [permission.Checker.ReadFilter]) or the sandbox masks it (filesystem.denyRead,
// keel's credentials and copies of files; with the sandbox off too, since the settings still
// call those files secret), or "" when it may be read. A memory file is writable inside the
// sandbox, so without this one `@secrets/token` a command wrote there would send the masked
// file to the model with the next session's system prompt.
func (s *Session) promptReadRefusal() func(path string) string {
	var rules func(string) string
	if s.checker != nil {
		rules = s.checker.ReadFilter()
	}
	masked := s.maskRefusal()
	return func(path string) string {
		if rules != nil {
			if why := rules(path); why != "" {
				return why
			}
		}
		return masked(path)
	}
}

// maskRefusal says why the sandbox masks path or the file it links to, or "" when it does not.
func (s *Session) maskRefusal() func(path string) string {
	masks := s.maskPolicy()
	return func(path string) string {
		for _, p := range []string{path, realPath(path)} {
			if masks.MaskedAt(p) {
				return "the sandbox masks it (" + masks.Why(p) + ")"
			}
		}
		return ""
	}
}

// maskPolicy is the sandbox policy whose masks [Session.promptReadRefusal] applies: the
// session's sandbox's, or with the sandbox off the masks the settings would give it.
func (s *Session) maskPolicy() sandbox.Policy {
	if s.sandbox != nil {
		return s.sandbox.Policy()
	}
	var st *settings.Sandbox
	if s.settings != nil {
		st = &s.settings.Sandbox
	}
	return sandbox.NewPolicy(sandbox.Input{Mode: sandbox.ModeOff, Settings: st,
		Dirs: append([]string{s.opts.Cwd}, s.state.AdditionalDirs...), Home: userHome(), KeelHome: s.opts.Home})
}

// privateIncludeRefusal refuses an include from a memory file a sandboxed command can write
// of a host file in a directory commands see as their own (/tmp, /dev, /proc): such a
// command could otherwise write `@/tmp/…` into CLAUDE.md and have the next session read it
// what the sandbox hides from it.
func (s *Session) privateIncludeRefusal() func(from, target string) string {
	p := s.maskPolicy()
	return func(from, target string) string {
		if !p.WritableAt(from) && !p.WritableAt(realPath(from)) {
			return ""
		}
		if private := p.PrivateRoot(target); private != "" {
			return "the file including it is one sandboxed commands can write, and they each have a private " + private + " that does not show this file"
		}
		return ""
	}
}

// realPath is path with its links resolved, or path itself where that fails.
func realPath(path string) string {
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	return path
}

// memoryOptions is where the session's memory files come from and what refuses one: the
// session's and `keel memory`'s ([LoadMemory]) alike.
func (s *Session) memoryOptions(trusted bool) memory.Options {
	home, _ := os.UserHomeDir()
	return memory.Options{Cwd: s.opts.Cwd, Home: home, KeelHome: s.opts.Home, ManagedPath: s.opts.ManagedMemoryPath,
		ExternalIncludes: trusted, Refuse: s.promptReadRefusal(), RefuseInclude: s.privateIncludeRefusal(), Logger: s.logger}
}

// LoadMemory is the memory a session configured as cfg would load with the settings st, for
// `keel memory`: its permission rules and the sandbox's masks leave out what they cover, and
// an untrusted workspace's files reach nothing outside it, as in the session.
func LoadMemory(cfg runconfig.Config, st *settings.Settings) (*memory.Set, error) {
	s, err := sandboxSession(cfg, st)
	if err != nil {
		return nil, err
	}
	s.opts.Trust, s.opts.PermissionMode = cfg.Trust, cfg.PermissionMode
	s.conf.s = s
	policy, _ := s.conf.permissionPolicy()
	s.checker = permission.New(permission.Config{Policy: policy, Home: userHome(), Logger: s.logger})
	s.sandbox = nil // the masks come from the settings (maskPolicy); no sandbox is started
	return memory.Load(s.memoryOptions(s.conf.trusted()))
}
