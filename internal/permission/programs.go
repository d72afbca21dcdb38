package permission

import (
	"slices"
	"strings"
	"sync"
)

// What a command does with the files its arguments name, for Read and Edit rules. Every word
// a program may take as a path is checked against Read rules (reading is what most programs
// do with a path); the program tables below say which words are written, which name whole
// directory trees, and which programs take no paths at all. A program keel has no table for
// may do anything with any word: each is checked as a read and as a write.

// fileRole is what a command does with one path.
type fileRole uint8

const (
	roleRead fileRole = 1 << iota
	roleWrite
	// roleReadTree and roleWriteTree: every file below the path (grep -r, tar -x).
	roleReadTree
	roleWriteTree
)

// fileArg is one word a command may use as a file.
type fileArg struct {
	f    wordFile
	role fileRole
	// repo says the path stands for the git repository holding it, history included: a rule
	// covering anything in it applies, whether or not the file exists now. tracked narrows
	// that to the files git tracks now (git diff and git grep without revisions).
	repo, tracked bool
}

// maxFileArgs caps the words one line offers to Read and Edit rules.
const maxFileArgs = 512

// progSpec is a program's table entry.
type progSpec struct {
	// noFiles: its arguments name no files (echo, printf…), so none is checked.
	noFiles bool
	// writes says which operands it writes.
	writes writeMode
	// writeOpts are options whose value it writes ("-o", "--output").
	writeOpts []string
	// recursive are the short flags and long options that make its operands trees; always
	// makes them trees whatever the flags (rsync, rg).
	recursive     string
	recursiveLong []string
	always        bool
	// cwdTree: without a path operand it works on the tree of the current directory (rg).
	cwdTree bool
	// pattern: its first operand is a pattern, not a path, unless -e or -f gave one (grep).
	pattern bool
	// custom reads programs whose arguments follow their own grammar (git, tar, find, dd…).
	custom func(c simpleCmd, u *fileUses)
}

type writeMode int

const (
	writeNone    writeMode = iota
	writeAll               // every operand (rm, touch, tee, mv, sed -i)
	writeLast              // the last operand, or -t/--target-directory's value (cp, install, ln)
	writeUnknown           // any word (a program keel has no table for)
)

// programTable is the table, built on first use. Programs not listed are writeUnknown.
var programs lazyTable[map[string]progSpec]

func programTable() map[string]progSpec { return programs.get(buildPrograms) }

func buildPrograms() map[string]progSpec {
	programs := map[string]progSpec{}
	for _, p := range strings.Fields(`echo printf true false : pwd sleep seq yes expr basename dirname id whoami
		uname hostname test [ exit return kill wait type which shift times nproc cd pushd popd set unset
		break continue getconf tty clear reset logname groups users arch`) {
		programs[p] = progSpec{noFiles: true}
	}
	for _, p := range strings.Fields(`cat tac head tail less more most nl od xxd hexdump strings file stat ls dir
		vdir wc md5sum sha1sum sha224sum sha256sum sha384sum sha512sum b2sum cksum sum cut paste join comm
		column fold fmt pr expand unexpand rev base32 base64 basenc cmp readlink realpath jq bat batcat du df
		tree look tr date numfmt iconv env nice nohup timeout stdbuf time command builtin exec`) {
		programs[p] = progSpec{}
	}
	for _, p := range strings.Fields(`rm unlink shred truncate touch mkdir rmdir chmod chown chgrp chattr
		setfacl tee mv mkfifo mknod gzip gunzip bzip2 bunzip2 xz unxz zstd unzstd lz4 compress uncompress`) {
		programs[p] = progSpec{writes: writeAll, recursive: "rR", recursiveLong: []string{"--recursive"}}
	}
	programs["iconv"] = progSpec{writeOpts: []string{"-o", "--output"}}
	programs["sort"] = progSpec{writeOpts: []string{"-o", "--output"}}
	programs["uniq"] = progSpec{custom: uniqFiles}
	programs["split"] = progSpec{custom: splitFiles}
	programs["csplit"] = programs["split"]
	for _, p := range []string{"cp", "install", "ln", "scp"} {
		programs[p] = progSpec{writes: writeLast, recursive: "rRa", recursiveLong: []string{"--recursive", "--archive"}}
	}
	programs["rsync"] = progSpec{writes: writeLast, always: true, writeOpts: []string{"--log-file", "--write-batch", "--only-write-batch"}}
	programs["diff"] = progSpec{recursive: "r", recursiveLong: []string{"--recursive"}}
	for _, p := range []string{"grep", "egrep", "fgrep", "zgrep"} {
		programs[p] = progSpec{pattern: true, cwdTree: true, recursive: "rR", recursiveLong: []string{"--recursive", "--dereference-recursive", "--directories=recurse"}}
	}
	for _, p := range []string{"rg", "ag", "ack", "ugrep"} {
		programs[p] = progSpec{pattern: true, always: true, cwdTree: true}
	}
	programs["zip"] = progSpec{recursive: "r", recursiveLong: []string{"--recurse-paths"}, custom: zipFiles}
	programs["unzip"] = progSpec{custom: unzipFiles}
	programs["tar"] = progSpec{custom: tarFiles}
	programs["find"] = progSpec{custom: findFiles}
	programs["dd"] = progSpec{custom: ddFiles}
	programs["sed"] = progSpec{custom: sedFiles}
	programs["git"] = progSpec{custom: gitFiles}
	programs["curl"] = progSpec{writeOpts: []string{"-o", "--output", "-D", "--dump-header", "-c", "--cookie-jar",
		"--trace", "--trace-ascii", "--libcurl", "--output-dir"}, custom: curlFiles}
	programs["wget"] = progSpec{custom: wgetFiles}
	programs["patch"] = progSpec{writeOpts: []string{"-o", "--output"}, custom: patchFiles}
	for _, p := range []string{"xargs", "parallel"} {
		programs[p] = progSpec{custom: xargsFiles}
	}
	programs["cpio"] = progSpec{custom: func(c simpleCmd, u *fileUses) { u.unknown("cpio reads file names from its input") }}
	for _, p := range []string{"awk", "gawk", "mawk", "nawk"} {
		programs[p] = progSpec{custom: awkFiles}
	}
	return programs
}

// fileUses collects what the commands of a line do with files.
type fileUses struct {
	args []fileArg
	// unknowns says why some files a command uses cannot be known.
	unknowns []string
	// commands counts the wrapped commands read, against maxFileCommands.
	commands int
}

// maxFileCommands caps the wrapped commands one line's files are read from.
const maxFileCommands = 256

func (u *fileUses) add(w shellWord, role fileRole) { u.addWord(w, role, false) }

func (u *fileUses) addWord(w shellWord, role fileRole, repo bool) {
	// A tree's top is itself read or written (find protected -delete removes protected).
	if role&roleReadTree != 0 {
		role |= roleRead
	}
	if role&roleWriteTree != 0 {
		role |= roleWrite
	}
	if len(u.args) >= maxFileArgs {
		u.unknown("more file names than keel checks in one line")
		return
	}
	for _, f := range w.files {
		u.args = append(u.args, fileArg{f: f, role: role, repo: repo})
	}
}

func (u *fileUses) addPath(path string, role fileRole, repo bool) {
	u.args = append(u.args, fileArg{f: wordFile{pattern: quotePattern(path)}, role: role, repo: repo})
}

func (u *fileUses) unknown(why string) {
	if !slices.Contains(u.unknowns, why) {
		u.unknowns = append(u.unknowns, why)
	}
}

func quotePattern(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`*?[\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// maxFileDepth bounds how many wrappers commandFiles looks through.
const maxFileDepth = 8

// commandFiles records what c does with files: c is one simple command as written.
func (u *fileUses) commandFiles(c simpleCmd, depth int) {
	if len(c.words) < 2 {
		return
	}
	if depth > 0 {
		u.commands++
	}
	if u.commands > maxFileCommands || depth > maxFileDepth {
		u.unknown("commands wrapped deeper than keel follows")
		return
	}
	name := baseName(c.name())
	if !c.words[0].static {
		name = ""
	}
	if spec, ok := transparentWrappers.Get()[name]; ok {
		if i, _, ok := wrapped(spec, c); ok {
			if i < len(c.words) {
				u.commandFiles(c.from(i), depth+1)
			}
			return
		}
	}
	if execWrappers.Get()[name] && name != "xargs" && name != "parallel" {
		// sudo, chroot, strace…: the wrapped command may start at any later word.
		for i, tails := 1, 0; i < len(c.words) && tails < 8; i++ {
			if w := c.words[i]; w.static && !strings.HasPrefix(w.value, "-") && !strings.Contains(w.value, "=") {
				u.commandFiles(c.from(i), depth+1)
				tails++
			}
		}
	}
	spec, known := programTable()[name]
	switch {
	case !known:
		spec = progSpec{writes: writeUnknown}
	case spec.noFiles:
		return
	case spec.custom != nil:
		spec.custom(c, u)
		if spec.writes == writeNone && spec.writeOpts == nil && !spec.pattern {
			return
		}
	}
	u.generic(c, spec)
}

// generic reads c with spec: options, their values, operands.
func (u *fileUses) generic(c simpleCmd, spec progSpec) {
	recursive := spec.always
	hasPattern := false
	var operands []int
	words := c.words[1:]
	for i := 0; i < len(words); i++ {
		w := words[i]
		v := w.value
		switch {
		case !w.static || v == "-" || !strings.HasPrefix(v, "-"):
			operands = append(operands, i)
			continue
		case v == "--":
			for j := i + 1; j < len(words); j++ {
				operands = append(operands, j)
			}
			i = len(words)
			continue
		}
		if fromFile(v) {
			u.unknown(v + " names files keel cannot see")
		}
		name, value, glued := strings.Cut(v, "=")
		if strings.HasPrefix(v, "--") {
			recursive = recursive || slices.Contains(spec.recursiveLong, name) || slices.Contains(spec.recursiveLong, v)
			hasPattern = hasPattern || name == "--regexp" || name == "--file"
		} else {
			recursive = recursive || strings.ContainsAny(v[1:], spec.recursive)
			hasPattern = hasPattern || strings.ContainsAny(v[1:], "ef") && spec.pattern
			recursive = recursive || spec.pattern && v == "-d" && i+1 < len(words) && words[i+1].value == "recurse"
		}
		role := roleRead
		if spec.writes == writeUnknown {
			role |= roleWrite
		}
		// An option's value: the next word, after "=", or glued to a short option.
		if val, ok := optionValue(v, spec.writeOpts); ok {
			role |= roleWrite
			if val == "" && !glued && i+1 < len(words) {
				u.add(words[i+1], roleRead|roleWrite)
				i++
			}
		} else if glued && value == "" {
			continue
		}
		u.add(w, role)
	}
	if spec.pattern && !hasPattern && len(operands) > 0 {
		u.add(words[operands[0]], roleRead)
		operands = operands[1:]
	}
	tree := func(r fileRole) fileRole {
		if recursive {
			return r | r<<2
		}
		return r
	}
	for k, i := range operands {
		role := tree(roleRead)
		switch spec.writes {
		case writeAll:
			role = tree(roleRead | roleWrite)
		case writeUnknown:
			role = roleRead | roleWrite
		case writeLast:
			if k == len(operands)-1 && len(operands) > 1 {
				role = tree(roleWrite) | roleWrite
			}
		}
		u.add(words[i], role)
	}
	if spec.cwdTree && recursive && len(operands) == 0 {
		u.addPath(".", roleReadTree, false)
	}
	if spec.writes == writeLast {
		// -t DIR / --target-directory=DIR names the destination.
		for i, w := range words {
			switch {
			case w.value == "-t" && i+1 < len(words):
				u.add(words[i+1], tree(roleWrite)|roleWrite)
			case strings.HasPrefix(w.value, "--target-directory="):
				u.add(w, tree(roleWrite)|roleWrite)
			}
		}
	}
}

// optionValue reports whether the option word v is one of opts (short "-o" anywhere in a
// cluster, long "--output" with or without "="), with the value glued to it if any.
func optionValue(v string, opts []string) (value string, ok bool) {
	for _, o := range opts {
		if strings.HasPrefix(o, "--") {
			if v == o {
				return "", true
			}
			if val, ok := strings.CutPrefix(v, o+"="); ok {
				return val, true
			}
			continue
		}
		if !strings.HasPrefix(v, "--") && len(o) == 2 {
			if i := strings.IndexByte(v[1:], o[1]); i >= 0 {
				return v[i+2:], true
			}
		}
	}
	return "", false
}

// fromFile reports an option that makes a program read the names of more files from a file
// or its input, which keel cannot see.
func fromFile(v string) bool {
	name, _, _ := strings.Cut(v, "=")
	switch name {
	case "--files-from", "--files0-from", "--pathspec-from-file":
		return true
	}
	return false
}

// lazyTable holds a table built on first use. The build function is passed at the call
// rather than stored in the variable because the tables' functions refer back to the
// tables, which Go's initialisation order would call a cycle.
type lazyTable[T any] struct {
	once sync.Once
	v    T
}

func (l *lazyTable[T]) get(build func() T) T {
	l.once.Do(func() { l.v = build() })
	return l.v
}
