package permission

import (
	"path"
	"slices"
	"strings"
)

// The programs whose arguments follow a grammar of their own. Each records every word as a
// read (a superset: most words are not paths), and what it writes and which trees it walks.

func (u *fileUses) readAll(c simpleCmd) {
	for _, w := range c.words[1:] {
		u.add(w, roleRead)
	}
}

// operandIndexes are the words of c (by index into c.words) that do not start with "-", and
// every word after "--"; valueOpts are short options whose value is the next word, which is
// then no operand.
func operandIndexes(c simpleCmd, valueOpts string) []int {
	var out []int
	for i := 1; i < len(c.words); i++ {
		v := c.words[i].value
		switch {
		case !c.words[i].static || v == "-" || !strings.HasPrefix(v, "-"):
			out = append(out, i)
		case v == "--":
			for j := i + 1; j < len(c.words); j++ {
				out = append(out, j)
			}
			return out
		case !strings.HasPrefix(v, "--") && len(v) == 2 && strings.IndexByte(valueOpts, v[1]) >= 0:
			i++
		}
	}
	return out
}

// optionWord finds the value of an option: "-x VALUE", "-xVALUE", "--long VALUE",
// "--long=VALUE". It returns the words holding values (the word itself for a glued value,
// whose derived paths include it).
func optionWords(c simpleCmd, short byte, long string) []shellWord {
	var out []shellWord
	for i := 1; i < len(c.words); i++ {
		v := c.words[i].value
		switch {
		case v == "--":
			return out
		case long != "" && v == long, short != 0 && v == "-"+string(short):
			if i+1 < len(c.words) {
				out = append(out, c.words[i+1])
			}
		case long != "" && strings.HasPrefix(v, long+"="),
			short != 0 && len(v) > 2 && v[0] == '-' && v[1] == short:
			out = append(out, c.words[i])
		}
	}
	return out
}

func hasOption(c simpleCmd, short string, long ...string) bool {
	for _, w := range c.words[1:] {
		v := w.value
		if v == "--" {
			return false
		}
		name, _, _ := strings.Cut(v, "=")
		if strings.HasPrefix(v, "--") && slices.Contains(long, name) ||
			!strings.HasPrefix(v, "--") && strings.HasPrefix(v, "-") && strings.ContainsAny(v[1:], short) && short != "" {
			return true
		}
	}
	return false
}

func uniqFiles(c simpleCmd, u *fileUses) {
	u.readAll(c)
	if ops := operandIndexes(c, "fsw"); len(ops) >= 2 {
		u.add(c.words[ops[1]], roleWrite)
	}
}

func splitFiles(c simpleCmd, u *fileUses) {
	u.readAll(c)
	ops := operandIndexes(c, "abflnCt")
	if len(ops) >= 2 {
		u.add(c.words[ops[len(ops)-1]], roleWrite)
	}
	for _, w := range optionWords(c, 'f', "--prefix") {
		u.add(w, roleWrite)
	}
}

func zipFiles(c simpleCmd, u *fileUses) {
	recursive := hasOption(c, "r", "--recurse-paths")
	if hasOption(c, "@", "--names-stdin") {
		u.unknown("zip reads file names from its input")
	}
	ops := operandIndexes(c, "bnPtx")
	for k, i := range ops {
		switch {
		case k == 0:
			u.add(c.words[i], roleRead|roleWrite)
		case recursive:
			u.add(c.words[i], roleReadTree)
		default:
			u.add(c.words[i], roleRead)
		}
	}
	u.readAll(c)
}

func unzipFiles(c simpleCmd, u *fileUses) {
	u.readAll(c)
	if hasOption(c, "lptvcZz") {
		return // lists, tests or prints: nothing written
	}
	dirs := optionWords(c, 'd', "")
	if len(dirs) == 0 {
		u.addPath(".", roleWriteTree, false)
	}
	for _, d := range dirs {
		u.add(d, roleWriteTree)
	}
}

// tarValueLetters are tar's short options that take a value.
const tarValueLetters = "fCTbHKLNVgX"

func tarFiles(c simpleCmd, u *fileUses) {
	u.readAll(c)
	var (
		modes        string
		archives     []shellWord
		dirs         []shellWord
		consumed     = map[int]bool{}
		longCreate   = hasOption(c, "", "--create", "--append", "--update", "--catenate", "--concatenate")
		longExtract  = hasOption(c, "", "--extract", "--get")
		pendingValue []byte // value letters waiting for the next words (old-style "czf x.tgz")
	)
	take := func(letter byte, w shellWord) {
		switch letter {
		case 'f':
			archives = append(archives, w)
		case 'C':
			dirs = append(dirs, w)
		case 'T':
			u.unknown("tar -T names files keel cannot see")
		}
	}
	for i := 1; i < len(c.words); i++ {
		w := c.words[i]
		v := w.value
		switch {
		case len(pendingValue) > 0:
			take(pendingValue[0], w)
			pendingValue = pendingValue[1:]
			consumed[i] = true
		case i == 1 && w.static && !strings.HasPrefix(v, "-"):
			// Old style: the first word is a cluster of letters, their values the next words.
			consumed[i] = true
			modes += v
			for j := 0; j < len(v); j++ {
				if strings.IndexByte(tarValueLetters, v[j]) >= 0 {
					pendingValue = append(pendingValue, v[j])
				}
			}
		case strings.HasPrefix(v, "--"):
			consumed[i] = true
			name, _, glued := strings.Cut(v, "=")
			switch name {
			case "--file", "--directory":
				if !glued && i+1 < len(c.words) {
					i++
					consumed[i] = true
					take(map[string]byte{"--file": 'f', "--directory": 'C'}[name], c.words[i])
				} else {
					take(map[string]byte{"--file": 'f', "--directory": 'C'}[name], w)
				}
			case "--files-from":
				u.unknown("tar --files-from names files keel cannot see")
			}
		case strings.HasPrefix(v, "-") && len(v) > 1:
			consumed[i] = true
			for j := 1; j < len(v); j++ {
				modes += string(v[j])
				if strings.IndexByte(tarValueLetters, v[j]) < 0 {
					continue
				}
				if j+1 < len(v) {
					take(v[j], w) // the value is glued: the word's derived paths hold it
				} else if i+1 < len(c.words) {
					i++
					consumed[i] = true
					take(v[j], c.words[i])
				}
				break
			}
		}
	}
	create := longCreate || strings.ContainsAny(modes, "cruA")
	extract := longExtract || strings.ContainsRune(modes, 'x')
	for _, a := range archives {
		if create {
			u.add(a, roleWrite)
		}
	}
	switch {
	case extract && len(dirs) == 0:
		u.addPath(".", roleWriteTree, false)
	case extract:
		for _, d := range dirs {
			u.add(d, roleWriteTree)
		}
	case create:
		for _, d := range dirs {
			u.add(d, roleReadTree)
		}
		for i := 1; i < len(c.words); i++ {
			if !consumed[i] {
				u.add(c.words[i], roleReadTree)
			}
		}
	}
}

func findFiles(c simpleCmd, u *fileUses) {
	var starts []shellWord
	i := 1
	for ; i < len(c.words); i++ {
		v := c.words[i].value
		if c.words[i].static && (strings.HasPrefix(v, "-") || v == "(" || v == "!" || v == ",") {
			break
		}
		starts = append(starts, c.words[i])
	}
	var role fileRole
	for ; i < len(c.words); i++ {
		w := c.words[i]
		switch w.value {
		case "-exec", "-execdir", "-ok", "-okdir":
			role |= roleReadTree
			end := i + 1
			for end < len(c.words) && c.words[end].value != ";" && c.words[end].value != "+" {
				end++
			}
			if end > i+1 {
				// The command's "{}" is every file found: what it does with "{}" it does to
				// the start points' trees.
				var inner fileUses
				inner.commandFiles(simpleCmd{words: c.words[i+1 : end]}, 1)
				for _, a := range inner.args {
					if strings.Contains(a.f.pattern, "{}") {
						role |= a.role << 2
						continue
					}
					u.args = append(u.args, a)
				}
				for _, why := range inner.unknowns {
					u.unknown(why)
				}
			}
			i = end
		case "-delete":
			role |= roleWriteTree
		case "-fprint", "-fprint0", "-fprintf", "-fls":
			if i+1 < len(c.words) {
				u.add(c.words[i+1], roleWrite)
				i++
			}
		case "-files0-from":
			u.unknown("find -files0-from names files keel cannot see")
		default:
			u.add(w, roleRead)
		}
	}
	if len(starts) == 0 {
		u.addPath(".", roleRead|role, false)
	}
	for _, s := range starts {
		u.add(s, roleRead|role)
	}
}

func ddFiles(c simpleCmd, u *fileUses) {
	for _, w := range c.words[1:] {
		switch {
		case strings.HasPrefix(w.value, "of="):
			u.add(w, roleWrite)
		default:
			u.add(w, roleRead)
		}
	}
}

func sedFiles(c simpleCmd, u *fileUses) {
	inPlace := hasOption(c, "i", "--in-place")
	sandbox := hasOption(c, "", "--sandbox")
	var scripts []string
	explicit := false
	for i := 1; i < len(c.words); i++ {
		v := c.words[i].value
		switch {
		case v == "-e" || v == "--expression":
			explicit = true
			if i+1 < len(c.words) {
				scripts = append(scripts, c.words[i+1].value)
				i++
			}
		case strings.HasPrefix(v, "--expression="):
			explicit = true
			scripts = append(scripts, strings.TrimPrefix(v, "--expression="))
		case strings.HasPrefix(v, "-e") && !strings.HasPrefix(v, "--"):
			explicit = true
			scripts = append(scripts, v[2:])
		case v == "-f" || v == "--file" || strings.HasPrefix(v, "--file=") || strings.HasPrefix(v, "-f"):
			explicit = true
			if !sandbox {
				u.unknown("a sed script file keel cannot read")
			}
		}
	}
	ops := operandIndexes(c, "efl")
	if !explicit && len(ops) > 0 {
		scripts = append(scripts, c.words[ops[0]].value)
		if !c.words[ops[0]].static {
			u.unknown("a sed script keel cannot read")
		}
		ops = ops[1:]
	}
	role := roleRead
	if inPlace {
		role |= roleWrite
	}
	for _, i := range ops {
		u.add(c.words[i], role)
	}
	for _, w := range c.words[1:] {
		u.add(w, roleRead)
	}
	if sandbox {
		return
	}
	for _, s := range scripts {
		sc, ok := parseSed(s)
		if !ok {
			u.unknown("a sed script keel cannot read")
			continue
		}
		for _, p := range sc.writes {
			u.addPath(p, roleWrite, false)
		}
		for _, p := range sc.reads {
			u.addPath(p, roleRead, false)
		}
		if sc.exec {
			u.unknown("a sed script that runs commands")
		}
	}
}

func awkFiles(c simpleCmd, u *fileUses) {
	u.readAll(c)
	if hasOption(c, "fE", "--file", "--include", "--load", "--exec") {
		u.unknown("an awk program file keel cannot read")
		return
	}
	if ops := operandIndexes(c, "vF"); len(ops) > 0 {
		prog := c.words[ops[0]].value
		if !c.words[ops[0]].static || strings.ContainsAny(prog, ">|") || strings.Contains(prog, "system") ||
			strings.Contains(prog, "getline") {
			u.unknown("an awk program that reads or writes files or runs commands")
		}
	}
}

// xargsValueLetters are xargs' short options that take the next word as their value.
const xargsValueLetters = "adEILnPs"

func xargsFiles(c simpleCmd, u *fileUses) {
	i := 1
	for ; i < len(c.words); i++ {
		v := c.words[i].value
		if !c.words[i].static || !strings.HasPrefix(v, "-") {
			break
		}
		if v == "--" {
			i++
			break
		}
		if len(v) == 2 && strings.IndexByte(xargsValueLetters, v[1]) >= 0 {
			i++
		}
	}
	if i >= len(c.words) {
		return // xargs echo
	}
	inner := c.from(i)
	if spec, ok := programTable()[baseName(inner.name())]; ok && spec.noFiles {
		return
	}
	u.unknown(baseName(c.name()) + " passes file names keel cannot see")
	u.commandFiles(inner, 1)
}

func curlFiles(c simpleCmd, u *fileUses) {
	if hasOption(c, "KJ", "--config") {
		u.unknown("curl reads a configuration or names its output from the server")
	}
	if !hasOption(c, "O", "--remote-name", "--remote-name-all") {
		return
	}
	for _, i := range operandIndexes(c, "oODcbdeFHKuUwXxT") {
		if v := c.words[i].value; c.words[i].static && strings.Contains(v, "/") {
			u.addPath(path.Base(v), roleWrite, false)
		}
	}
}

func wgetFiles(c simpleCmd, u *fileUses) {
	u.readAll(c)
	for _, w := range append(optionWords(c, 'O', "--output-document"), append(optionWords(c, 'o', "--output-file"),
		optionWords(c, 'a', "--append-output")...)...) {
		u.add(w, roleWrite)
	}
	dirs := optionWords(c, 'P', "--directory-prefix")
	for _, d := range dirs {
		u.add(d, roleWriteTree)
	}
	if len(dirs) == 0 && !hasOption(c, "O", "--output-document", "--spider") {
		u.addPath(".", roleWriteTree, false)
	}
}

func patchFiles(c simpleCmd, u *fileUses) {
	u.readAll(c)
	ops := operandIndexes(c, "BDdFgiopVYz")
	if len(ops) > 0 {
		u.add(c.words[ops[0]], roleWrite)
		return
	}
	dirs := optionWords(c, 'd', "--directory")
	for _, d := range dirs {
		u.add(d, roleWriteTree)
	}
	if len(dirs) == 0 {
		u.addPath(".", roleWriteTree, false)
	}
}
