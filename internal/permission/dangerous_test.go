package permission

import "testing"

// TestDangerousOptions: a prefix or wildcard rule that lets a program read does not cover the
// options that make it run code or write files, unless the rule names them; the same
// program's ordinary uses stay allowed.
func TestDangerousOptions(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		rule string
		cmds map[string]Behavior
	}{
		{"Bash(git diff:*)", map[string]Behavior{"git diff --output=x": Ask, "git diff --ext-diff": Ask, "git diff --textconv HEAD": Ask,
			"git diff --stat": Allow, "git diff": Allow, "git diff HEAD~1 -- src": Allow}},
		{"Bash(git diff *)", map[string]Behavior{"git diff --output=x": Ask, "git diff --stat": Allow}},
		{"Bash(git log:*)", map[string]Behavior{"git log --output=/tmp/x": Ask, "git log -p": Allow, "git log --oneline -5": Allow}},
		{"Bash(git grep:*)", map[string]Behavior{"git grep -Oless foo": Ask, "git grep -O foo": Ask, "git grep --open-files-in-pager=sh foo": Ask,
			"git grep -n foo": Allow}},
		{"Bash(git fetch:*)", map[string]Behavior{"git fetch --upload-pack=touch origin": Ask, "git fetch -u touch origin": Ask,
			"git fetch 'ext::sh -c touch% /tmp/x'": Ask, "git fetch origin": Allow}},
		{"Bash(git:*)", map[string]Behavior{"git -c core.pager=touch log": Ask, "git --exec-path=/tmp log": Ask,
			"git --config-env=core.pager=X log": Ask, "git -C /tmp/evil status": Ask, "git -p log": Ask, "git --paginate log": Ask,
			"git log -p": Allow, "git status": Allow, "git --exec-path": Allow, "git rebase -x 'make test' main": Ask,
			"git config core.fsmonitor /tmp/x": Ask, "git config --get user.name": Allow, "git submodule foreach touch": Ask}},
		{"Bash(git -c core.pager=cat log:*)", map[string]Behavior{"git -c core.pager=cat log -5": Allow}},
		{"Bash(find:*)", map[string]Behavior{"find . -exec touch {} +": Ask, "find . -execdir touch {} +": Ask, "find . -fprint /tmp/x": Ask,
			"find . -delete": Ask, "find . -name '*.go'": Allow, "find . -type f -newer x": Allow}},
		{"Bash(find * -delete)", map[string]Behavior{"find . -delete": Allow, "find . -delete -exec touch {} +": Ask}},
		{"Bash(sed:*)", map[string]Behavior{"sed -n '1e touch x' f": Ask, "sed 'w out' f": Ask, "sed -i s/a/b/ f": Ask,
			"sed 's/a/b/w out' f": Ask, "sed 's/a/b/e' f": Ask, "sed -f script.sed f": Ask, "sed '1!G;h;$!d' f": Allow,
			"sed s/a/b/ f": Allow, "sed -n 's/x/y/p' f": Allow, "sed -e s/a/b/ -e 1d f": Allow, "sed 's|/w|x|g' f": Allow}},
		{"Bash(sort:*)", map[string]Behavior{"sort -o x y": Ask, "sort -no x y": Ask, "sort --output=x y": Ask,
			"sort --compress-program=sh y": Ask, "sort -n y": Allow}},
		{"Bash(sort -o:*)", map[string]Behavior{"sort -o x y": Allow}},
		{"Bash(tar:*)", map[string]Behavior{"tar --checkpoint=1 --checkpoint-action=exec=touch -cf x.tar src": Ask,
			"tar -I touch -cf x.tar src": Ask, "tar --to-command=touch -xf x.tar": Ask, "tar -cf x.tar src": Allow}},
		{"Bash(awk:*)", map[string]Behavior{`awk 'BEGIN{system("touch x")}'`: Ask, `awk '{print > "x"}' f`: Ask,
			`awk '{print | "sh"}' f`: Ask, "awk -f prog.awk f": Ask, "awk '{print $1}' f": Allow}},
		{"Bash(rg:*)", map[string]Behavior{"rg --pre touch x": Ask, "rg --pre=touch x": Ask, "rg -n x": Allow}},
		{"Bash(xargs:*)", map[string]Behavior{"xargs -a list echo": Ask, "xargs echo": Allow}},
		{"Bash(env:*)", map[string]Behavior{"env -S 'touch x'": Ask, "env LD_PRELOAD=/tmp/x.so ls": Ask, "env GIT_SSH_COMMAND=x ls": Ask,
			"env FOO=1 ls": Allow}},
		{"Bash(less:*)", map[string]Behavior{"less +!touch f": Ask, "less -o log f": Ask, "less --lesskey-file=k f": Ask, "less -N f": Allow}},
		{"Bash(man:*)", map[string]Behavior{"man -P touch ls": Ask, "man --pager=touch ls": Ask, "man ls": Allow}},
		{"Bash(zip:*)", map[string]Behavior{"zip -TT 'touch x' x.zip f": Ask, "zip x.zip f": Allow}},
		{"Bash(unzip:*)", map[string]Behavior{"unzip -d .git/hooks x.zip": Ask, "unzip -l x.zip": Allow}},
		{"Bash(rsync:*)", map[string]Behavior{"rsync -e 'sh -c touch' a b": Ask, "rsync --rsh=x a b": Ask, "rsync -av a b": Allow}},
		{"Bash(ssh:*)", map[string]Behavior{"ssh -o ProxyCommand=touch host": Ask, "ssh -oProxyCommand=touch host": Ask,
			"ssh -F cfg host": Ask, "ssh host": Allow}},
		{"Bash(make:*)", map[string]Behavior{"make -f evil.mk": Ask, "make --eval=x": Ask, "make SHELL=/tmp/x": Ask, "make -C sub": Ask,
			"make test": Allow, "make -j4 test": Allow}},
		{"Bash(npm run:*)", map[string]Behavior{"npm run test --script-shell=/tmp/x": Ask, "npm run test --prefix ../other": Ask, "npm run test": Allow}},
		{"Bash(python3:*)", map[string]Behavior{"python3 -c 'import os'": Ask, "python3 -m http.server": Ask, "python3 script.py -c x": Allow}},
		{"Bash(python3 -m pytest:*)", map[string]Behavior{"python3 -m pytest -c setup.cfg": Allow}},
		{"Bash(node:*)", map[string]Behavior{"node -e x": Ask, "node --require ./x.js app.js": Ask, "node app.js -e": Allow}},
		{"Bash(perl:*)", map[string]Behavior{"perl -e x": Ask, "perl -i -pe s/a/b/ f": Ask, "perl script.pl": Allow}},
		{"Bash(ruby:*)", map[string]Behavior{"ruby -e x": Ask, "ruby script.rb": Allow}},
	}
	for _, tt := range tests {
		c := New(Config{Policy: Policy{Mode: ModeDefault, Rules: mustRules(t, Allow, tt.rule), Dirs: []string{dir}}})
		for cmd, want := range tt.cmds {
			if d := c.Evaluate(Request{Tool: "Bash", Command: cmd, Cwd: dir}); d.Behavior != want {
				t.Errorf("%s: %q got %s (%s); want %s", tt.rule, cmd, d.Behavior, d.Reason, want)
			}
		}
	}
}
