package sandbox_test

import (
	"path/filepath"
	"testing"
)

// gitAttacks are the ways the adversarial test found (F1, F3, F4, F5, F6) and their
// variants.
var gitAttacks = map[string]gitAttack{
	"commondir": {script: "mkgitdir evilc && cp -r .git/objects/. evilc/objects/ && cp -r .git/refs/. evilc/refs/ && echo ../evilc > .git/commondir",
		layout: func(t *testing.T, base string) (string, string) { ws := repoLayout(t, base); return ws, ws }},
	"worktree admin commondir": {script: "mkgitdir evilc && echo \"$PWD/evilc\" > .git/worktrees/wt/commondir",
		layout: func(t *testing.T, base string) (string, string) {
			return repoLayout(t, base), filepath.Join(base, "wt")
		}},
	"submodule config": {script: "evilcfg >> .git/modules/sm/config",
		layout: func(t *testing.T, base string) (string, string) { ws := repoLayout(t, base); return ws, ws }},
	"submodule gitdir swapped": {script: "{ mv .git/modules .git/modules.old || mv .git/modules/sm .git/modules/sm.old; } && mkgitdir .git/modules/sm",
		layout: func(t *testing.T, base string) (string, string) { ws := repoLayout(t, base); return ws, ws }},
	"nested config": {script: "evilcfg >> nested/.git/config",
		layout: func(t *testing.T, base string) (string, string) {
			ws := repoLayout(t, base)
			return ws, filepath.Join(ws, "nested")
		}},
	"nested swapped": {script: "{ mv nested nested.old || mv nested/.git nested/.git.old; } && mkgitdir nested/.git",
		layout: func(t *testing.T, base string) (string, string) {
			ws := repoLayout(t, base)
			return ws, filepath.Join(ws, "nested")
		}},
	"linked worktree .git file": {script: "mkgitdir evil && echo 'gitdir: evil' > .git",
		layout: linkedWorktree},
	"linked worktree .git replaced": {script: "mkgitdir evil && { rm -f .git || mv .git .git.old; } && echo 'gitdir: evil' > .git",
		layout: linkedWorktree},
	"not a repository": {script: "mkgitdir .git",
		layout: func(t *testing.T, base string) (string, string) {
			ws := filepath.Join(base, "plain")
			write(t, filepath.Join(ws, "f"), "f\n")
			return ws, ws
		}},
	"subdirectory of a repository": {script: "mkgitdir .git",
		layout: func(t *testing.T, base string) (string, string) {
			newRepo(t, filepath.Join(base, "repo"))
			ws := filepath.Join(base, "repo", "pkg")
			write(t, filepath.Join(ws, "f"), "f\n")
			return ws, ws
		}},
	"made repository": {disarmed: true, script: "git init -q made && evilcfg >> made/.git/config",
		layout: func(t *testing.T, base string) (string, string) {
			ws := repoLayout(t, base)
			return ws, filepath.Join(ws, "made")
		}},
	"made .git file to a repository out of the search": {disarmed: true,
		script: "mkgitdir node_modules/r && mkdir made && echo \"gitdir: $PWD/node_modules/r\" > made/.git",
		layout: func(t *testing.T, base string) (string, string) {
			ws := repoLayout(t, base)
			return ws, filepath.Join(ws, "made")
		}},
	"planted submodule out of the search": {disarmed: true,
		script: "git init -q node_modules/sm2 && evilcfg >> node_modules/sm2/.git/config && git -C node_modules/sm2 -c user.name=x -c user.email=x@x commit -q --allow-empty -m p && git add -f node_modules/sm2 2>/dev/null",
		layout: func(t *testing.T, base string) (string, string) { ws := repoLayout(t, base); return ws, ws }},
	// An independent adversarial run found these (A1–A28).
	"old configuration moved into a new gitdir": {disarmed: true, earlier: "mkdir stash && evilcfg > stash/config",
		script: "git init -q --bare /tmp/b && cp -r /tmp/b/HEAD /tmp/b/objects /tmp/b/refs stash/ && mkdir sub && mv stash sub/.git",
		layout: func(t *testing.T, base string) (string, string) {
			ws := repoLayout(t, base)
			return ws, filepath.Join(ws, "sub")
		}},
	"old hooks moved into a new gitdir": {disarmed: true, earlier: "mkdir -p stash/hooks && evilhook > stash/hooks/post-commit && chmod +x stash/hooks/post-commit",
		script:  "git init -q sub && rm -rf sub/.git/hooks && mv stash/hooks sub/.git/hooks",
		outside: []string{"-c", "user.name=x", "-c", "user.email=x@x", "commit", "-q", "--allow-empty", "-m", "x"},
		layout: func(t *testing.T, base string) (string, string) {
			ws := repoLayout(t, base)
			return ws, filepath.Join(ws, "sub")
		}},
	".git file with a trailing space": {disarmed: true,
		script: "git init -q --bare '.git/evil ' && git -C '.git/evil ' config core.bare false && evilcfg >> '.git/evil /config' && mkdir sub && printf 'gitdir: ../.git/evil \\n' > sub/.git && (cd sub && git -c user.name=x -c user.email=x@x commit -q --allow-empty -m x) && git add sub",
		layout: func(t *testing.T, base string) (string, string) { ws := repoLayout(t, base); return ws, ws }},
	"commondir with a trailing space": {disarmed: true,
		script: "git init -q --bare '.git/evc ' && git -C '.git/evc ' config core.bare false && evilcfg >> '.git/evc /config' && mkdir -p .git/evc/objects .git/evc/refs wt sub && echo 'ref: refs/heads/main' > wt/HEAD && printf '../.git/evc \\n' > wt/commondir && echo \"$PWD/sub/.git\" > wt/gitdir && printf 'gitdir: ../wt\\n' > sub/.git",
		layout: func(t *testing.T, base string) (string, string) {
			ws := repoLayout(t, base)
			return ws, filepath.Join(ws, "sub")
		}},
	".git a link to a .git file": {disarmed: true, earlier: "git update-index --add --cacheinfo 160000,$(git rev-parse HEAD),sub",
		script: "git init -q --bare .git/evil2 && git -C .git/evil2 config core.bare false && evilcfg >> .git/evil2/config && mkdir sub && printf 'gitdir: ../.git/evil2\\n' > gitfile.txt && ln -s ../gitfile.txt sub/.git",
		layout: func(t *testing.T, base string) (string, string) { ws := repoLayout(t, base); return ws, ws }},
	".git a link to a .git file, git run there": {disarmed: true,
		script: "git init -q --bare .git/evil3 && git -C .git/evil3 config core.bare false && evilcfg >> .git/evil3/config && mkdir sub && printf 'gitdir: ../.git/evil3\\n' > gitfile.txt && ln -s ../gitfile.txt sub/.git",
		layout: func(t *testing.T, base string) (string, string) {
			ws := repoLayout(t, base)
			return ws, filepath.Join(ws, "sub")
		}},
	// A second adversarial run (B1–B16).
	".git file padded past what keel read": {disarmed: true,
		script: "git init -q --bare node_modules/x/g && git -C node_modules/x/g config core.bare false && evilcfg >> node_modules/x/g/config && mkdir sub && { printf 'gitdir: ../node_modules/x/g'; head -c 70000 /dev/zero | tr '\\0' '\\n'; } > sub/.git && (cd sub && git -c user.name=x -c user.email=x@x commit -q --allow-empty -m x) && git add sub",
		layout: func(t *testing.T, base string) (string, string) { ws := repoLayout(t, base); return ws, ws }},
	"commondir padded past what keel read": {disarmed: true,
		script: "git init -q --bare node_modules/y/c && git -C node_modules/y/c config core.bare false && evilcfg >> node_modules/y/c/config && mkdir -p sub/.git && echo 'ref: refs/heads/main' > sub/.git/HEAD && { printf '../../node_modules/y/c'; head -c 70000 /dev/zero | tr '\\0' '\\n'; } > sub/.git/commondir",
		layout: func(t *testing.T, base string) (string, string) {
			ws := repoLayout(t, base)
			return ws, filepath.Join(ws, "sub")
		}},
	".git file with a NUL": {disarmed: true,
		script: "git init -q --bare node_modules/x/g && git -C node_modules/x/g config core.bare false && evilcfg >> node_modules/x/g/config && mkdir sub && printf 'gitdir: ../node_modules/x/g\\0junk\\n' > sub/.git && (cd sub && git -c user.name=x -c user.email=x@x commit -q --allow-empty -m x) && git add sub",
		layout: func(t *testing.T, base string) (string, string) { ws := repoLayout(t, base); return ws, ws }},
	".git file with .. after a link": {disarmed: true,
		script: "git init -q --bare node_modules/x/g && git -C node_modules/x/g config core.bare false && evilcfg >> node_modules/x/g/config && mkdir -p node_modules/x/d sub && ln -s ../node_modules/x/d sub/lnk && printf 'gitdir: lnk/../g\\n' > sub/.git && (cd sub && git -c user.name=x -c user.email=x@x commit -q --allow-empty -m x) && git add sub",
		layout: func(t *testing.T, base string) (string, string) { ws := repoLayout(t, base); return ws, ws }},
	"HEAD, objects and refs beside the project's files": {disarmed: true,
		script: "mkdir -p objects refs && echo 'ref: refs/heads/main' > HEAD && git init -q sub && evilcfg >> sub/.git/config",
		layout: func(t *testing.T, base string) (string, string) {
			ws := repoLayout(t, base)
			return ws, filepath.Join(ws, "sub")
		}},
	"index put back as it was": {disarmed: true,
		earlier: "b=$(echo hi | git hash-object -w --stdin) && git update-index --add --cacheinfo 100644,$b,node_modules/pkg",
		script:  "cp -p .git/index /tmp/ref && git update-index --cacheinfo 160000,$(git rev-parse HEAD),node_modules/pkg && touch -r /tmp/ref .git/index && git init -q node_modules/pkg && evilcfg >> node_modules/pkg/.git/config",
		layout:  func(t *testing.T, base string) (string, string) { ws := repoLayout(t, base); return ws, ws }},
	"a link in a protected gitdir's path replaced": {disarmed: true,
		earlier: "git init -q --bare real/g && git -C real/g config core.bare false && ln -s real lnk && mkdir sub && echo 'gitdir: ../lnk/g' > sub/.git && (cd sub && git -c user.name=x -c user.email=x@x commit -q --allow-empty -m x) && git add sub",
		script:  "rm lnk && mkdir -p node_modules/x && git init -q --bare node_modules/x/g && git -C node_modules/x/g config core.bare false && evilcfg >> node_modules/x/g/config && ln -s node_modules/x lnk",
		layout:  func(t *testing.T, base string) (string, string) { ws := repoLayout(t, base); return ws, ws }},
	"submodule entry in a submodule's index": {disarmed: true,
		script: "cd sm && git update-index --add --cacheinfo 160000,$(git rev-parse HEAD),node_modules/p && git init -q node_modules/p && evilcfg >> node_modules/p/.git/config",
		layout: func(t *testing.T, base string) (string, string) { ws := repoLayout(t, base); return ws, ws }},
	"remotes/ in the protected .git": {disarmed: true,
		script:  "git init -q --bare node_modules/x/evil.git && evilhook > node_modules/x/evil.git/hooks/pre-receive && chmod +x node_modules/x/evil.git/hooks/pre-receive && mkdir -p .git/remotes && printf 'URL: %s/node_modules/x/evil.git\\nPush: refs/heads/*:refs/heads/*\\n' \"$PWD\" > .git/remotes/origin",
		outside: []string{"push", "-q", "origin", "main"},
		layout:  func(t *testing.T, base string) (string, string) { ws := repoLayout(t, base); return ws, ws }},
	// A third adversarial run (C1–C8).
	"commondir with a line end before a NUL": {disarmed: true,
		script: "git init -q --bare node_modules/x/g && git -C node_modules/x/g config core.bare false && evilcfg >> node_modules/x/g/config && ln -s node_modules/x/g $'.git\\n' && mkdir -p sub/.git && echo 'ref: refs/heads/main' > sub/.git/HEAD && printf '../../.git\\n\\0' > sub/.git/commondir",
		layout: func(t *testing.T, base string) (string, string) {
			ws := repoLayout(t, base)
			return ws, filepath.Join(ws, "sub")
		}},
	"submodule entry in a repository the command made": {disarmed: true,
		script: "git init -q node_modules/p && evilcfg >> node_modules/p/.git/config && git -C node_modules/p -c user.name=x -c user.email=x@x commit -q --allow-empty -m p && git init -q sub && mkdir -p sub/node_modules/m && echo \"gitdir: $PWD/node_modules/p/.git\" > sub/node_modules/m/.git && git -C sub update-index --add --cacheinfo 160000,$(git -C node_modules/p rev-parse HEAD),node_modules/m && git -C sub -c user.name=x -c user.email=x@x commit -q -m s && git add sub",
		layout: func(t *testing.T, base string) (string, string) { ws := repoLayout(t, base); return ws, ws }},
	"submodule entry in a made repository whose configuration git refuses to run under": {disarmed: true,
		script: "git init -q node_modules/p && evilcfg >> node_modules/p/.git/config && git -C node_modules/p -c user.name=x -c user.email=x@x commit -q --allow-empty -m p && git init -q sub && git -C sub config 'filter.a=b.clean' x && mkdir -p sub/node_modules/m && echo \"gitdir: $PWD/node_modules/p/.git\" > sub/node_modules/m/.git && git -C sub update-index --add --cacheinfo 160000,$(git -C node_modules/p rev-parse HEAD),node_modules/m && git -C sub -c user.name=x -c user.email=x@x commit -q -m s && git add sub",
		layout: func(t *testing.T, base string) (string, string) { ws := repoLayout(t, base); return ws, ws }},
	"index a link": {disarmed: true,
		script: "b=$(git rev-parse HEAD) && cp .git/index idx && git update-index --add --cacheinfo 160000,$b,node_modules/p && mv .git/index idx2 && ln -s ../idx2 .git/index && git init -q node_modules/p && evilcfg >> node_modules/p/.git/config",
		layout: func(t *testing.T, base string) (string, string) { ws := repoLayout(t, base); return ws, ws }},
	"commondir past 4 KiB of /.": {disarmed: true,
		script: "git init -q --bare node_modules/y/c && git -C node_modules/y/c config core.bare false && evilcfg >> node_modules/y/c/config && mkdir -p sub/.git && echo 'ref: refs/heads/main' > sub/.git/HEAD && { printf '../../node_modules/y/c'; for i in $(seq 3000); do printf '/.'; done; } > sub/.git/commondir",
		layout: func(t *testing.T, base string) (string, string) {
			ws := repoLayout(t, base)
			return ws, filepath.Join(ws, "sub")
		}},
	"HEAD and commondir only": {disarmed: true,
		script:  "git init -q --bare node_modules/y/c && printf '[alias]\\n\\tst = !touch %s\\n' \"$MARK\" >> node_modules/y/c/config && mkdir -p lib && echo 'ref: refs/heads/main' > lib/HEAD && echo ../node_modules/y/c > lib/commondir",
		outside: []string{"st"},
		layout: func(t *testing.T, base string) (string, string) {
			ws := repoLayout(t, base)
			return ws, filepath.Join(ws, "lib")
		}},
	"remote URL to a repository with hooks out of the search": {disarmed: true,
		script:  "git init -q sub && git init -q --bare node_modules/x/r.git && evilhook > node_modules/x/r.git/hooks/pre-receive && chmod +x node_modules/x/r.git/hooks/pre-receive && git -C sub remote add origin \"$PWD/node_modules/x/r.git\" && git -C sub -c user.name=x -c user.email=x@x commit -q --allow-empty -m x",
		outside: []string{"push", "-q", "origin", "HEAD:refs/heads/x"},
		layout: func(t *testing.T, base string) (string, string) {
			ws := repoLayout(t, base)
			return ws, filepath.Join(ws, "sub")
		}},
	// A fourth adversarial run (E0–E4): paths through /proc/self, which git resolves from its
	// own working directory, and links a later command retargets.
	".git file through /proc/self/cwd": {disarmed: true,
		script: "git update-index --add --cacheinfo 160000,$(git rev-parse HEAD),sub && git init -q --bare sub/node_modules/g && git -C sub/node_modules/g config core.bare false && evilcfg >> sub/node_modules/g/config && git init -q --bare node_modules/g && git -C node_modules/g config core.bare false && echo 'gitdir: /proc/self/cwd/node_modules/g' > sub/.git",
		layout: func(t *testing.T, base string) (string, string) { ws := repoLayout(t, base); return ws, ws }},
	"commondir through /proc/self/cwd": {disarmed: true,
		script: "git init -q --bare node_modules/c && git -C node_modules/c config core.bare false && evilcfg >> node_modules/c/config && mkdir -p sub/.git && echo 'ref: refs/heads/main' > sub/.git/HEAD && echo /proc/self/cwd/../node_modules/c > sub/.git/commondir",
		layout: func(t *testing.T, base string) (string, string) {
			ws := repoLayout(t, base)
			return ws, filepath.Join(ws, "sub")
		}},
	"remote URL through /proc/self/cwd": {disarmed: true,
		script:  "git init -q sub && git init -q --bare node_modules/x/evil.git && evilhook > node_modules/x/evil.git/hooks/pre-receive && chmod +x node_modules/x/evil.git/hooks/pre-receive && git -C sub remote add origin /proc/self/cwd/../node_modules/x/evil.git && git -C sub -c user.name=x -c user.email=x@x commit -q --allow-empty -m x",
		outside: []string{"push", "-q", "origin", "HEAD:refs/heads/x"},
		layout: func(t *testing.T, base string) (string, string) {
			ws := repoLayout(t, base)
			return ws, filepath.Join(ws, "sub")
		}},
	"remote URL through a link retargeted later": {disarmed: true,
		earlier: "git init -q sub && mkdir real && git init -q --bare real/r.git && ln -s real lnk && git -C sub remote add origin \"$PWD/lnk/r.git\" && git -C sub -c user.name=x -c user.email=x@x commit -q --allow-empty -m x",
		script:  "rm lnk && git init -q --bare node_modules/x/r.git && evilhook > node_modules/x/r.git/hooks/pre-receive && chmod +x node_modules/x/r.git/hooks/pre-receive && ln -s node_modules/x lnk",
		outside: []string{"push", "-q", "origin", "HEAD:refs/heads/x"},
		layout: func(t *testing.T, base string) (string, string) {
			ws := repoLayout(t, base)
			return ws, filepath.Join(ws, "sub")
		}},
	"submodule entry in an earlier command, repository out of the search later": {disarmed: true,
		earlier: "git update-index --add --cacheinfo 160000,$(git rev-parse HEAD),node_modules/pkg",
		script:  "git init -q node_modules/pkg && evilcfg >> node_modules/pkg/.git/config",
		layout:  func(t *testing.T, base string) (string, string) { ws := repoLayout(t, base); return ws, ws }},
	"past the repositories the search protects": {disarmed: true,
		script: "for i in $(seq -w 1 260); do mkdir -p r$i/.git; done && git init -q zzz && evilcfg >> zzz/.git/config",
		layout: func(t *testing.T, base string) (string, string) {
			ws := repoLayout(t, base)
			return ws, filepath.Join(ws, "zzz")
		}},
	"past the repositories the search protects, armed later": {disarmed: true,
		earlier: "for i in $(seq -w 1 260); do mkdir -p r$i/.git; done && git init -q zzz",
		script:  "evilcfg >> zzz/.git/config",
		layout: func(t *testing.T, base string) (string, string) {
			ws := repoLayout(t, base)
			return ws, filepath.Join(ws, "zzz")
		}},
	"bare repository without a configuration": {disarmed: true,
		script:  "git init -q --bare evil.git && rm evil.git/config && evilhook > evil.git/hooks/post-receive && chmod +x evil.git/hooks/post-receive",
		outside: []string{"push", "-q", "./evil.git", "HEAD:refs/heads/x"},
		layout:  func(t *testing.T, base string) (string, string) { ws := repoLayout(t, base); return ws, ws }},
	"a FIFO named commondir": {disarmed: true,
		script: "git init -q made && evilcfg >> made/.git/config && git init -q --bare zz.git && mkfifo zz.git/commondir",
		layout: func(t *testing.T, base string) (string, string) {
			ws := repoLayout(t, base)
			return ws, filepath.Join(ws, "made")
		}},
	"a huge .git file": {disarmed: true,
		script: "git init -q made && evilcfg >> made/.git/config && mkdir big && truncate -s 64G big/.git",
		layout: func(t *testing.T, base string) (string, string) {
			ws := repoLayout(t, base)
			return ws, filepath.Join(ws, "made")
		}},
	"home git config": {home: true, script: "mkdir -p .config/git && evilcfg > .config/git/config",
		layout: func(t *testing.T, base string) (string, string) {
			ws := filepath.Join(base, "home")
			newRepo(t, filepath.Join(ws, "proj"))
			return ws, filepath.Join(ws, "proj")
		}},
}
