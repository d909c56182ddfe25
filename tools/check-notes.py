#!/usr/bin/env python3
"""Checks graft's Note cross-references and the paths named in comments.

Run from anywhere: `tools/check-notes.sh` (this file does the work; standard library only). It reads
every tracked (or untracked, not ignored) file under include/ src/ apps/ tests/ bench/ examples/
docs/ tools/ fuzz/ and cmake/, plus the Markdown files at the repository root, and fails (exit 1,
one line per problem) on:

Notes
  Definition: a comment line whose whole text is `Note [Title]` -- in C++ `// Note [Title]` alone on
    its line (indentation allowed), in Python/shell/CMake `# Note [Title]` alone -- followed by a
    comment line that starts the Note's text. Nothing else defines a Note: `// Note [X]: text`
    is a citation with a remark, wherever it stands.
  Citation: `Note [Title]` anywhere in a comment (C++ `//` and `/* */`, `#` in scripts) or anywhere
    in a Markdown file. A title may wrap onto the next comment line; runs of spaces (and the comment
    markers of a wrapped line) count as one space. `Note [...]` is a placeholder, not a citation.
  Failure: a Title cited but never defined; a Title defined more than once; a definition line not
    followed by a comment line (a heading with no text).

Paths (in comments of source files -- .h .cpp .inc .py .sh .cmake CMakeLists.txt -- and in Markdown)
  A path token is a run of letters, digits and `_ . + - / * < > { }` that ends in a folder's `/`
  or in one of the extensions .h .hpp .cpp .inc .md .py .sh .cmake .txt .svg .json .dict (names
  with no extension, such as built executables `bench/graft_kernels`, are not checked). It must name
  something that exists:
    - one starting with a top-level folder (include/ src/ apps/ tests/ bench/ examples/ docs/
      tools/ fuzz/ cmake/ .ci/) is taken from the repository root;
    - one starting with `graft/` is an include path, taken from include/;
    - in a source file's comment, any other token with a `/` (`nn/functional.h`,
      `kernels/dispatch.h`) must be the tail of an existing path (at a folder boundary), and a bare
      file name with a source extension (.h .hpp .cpp .inc .md .py .sh .cmake), such as `copy.cpp`,
      must be the name of an existing file. Markdown is held only to the two rules above.
  A token holding `*`, `<`, `{` or `...` is a pattern: its folder (the part before the last `/`
  ahead of the wildcard) must exist. PyTorch's own files (`torch/...`, `aten/...`, `c10/...`), build
  folders (build/, build-*/), `$VAR/...` and URLs are not paths of this repository.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCAN_DIRS = ("include", "src", "apps", "tests", "bench", "examples", "docs", "tools", "fuzz", "cmake")
TOP_DIRS = SCAN_DIRS + (".ci",)
CPP_EXT = (".h", ".hpp", ".cpp", ".cc", ".inc")
HASH_EXT = (".py", ".sh", ".cmake")
PATH_EXT = ("h", "hpp", "cpp", "inc", "md", "py", "sh", "cmake", "txt", "svg", "json", "dict")

NOTE_RE = re.compile(r"Note \[([^\]\[]+)\]")
DEF_CPP_RE = re.compile(r"^\s*//\s*Note \[([^\]\[]+)\]\s*$")
DEF_HASH_RE = re.compile(r"^\s*#\s*Note \[([^\]\[]+)\]\s*$")
# A path-like token (see the rules above); the checks below decide which tokens count.
PATH_RE = re.compile(r"(?<![\w./+$-])(\.?[A-Za-z_][\w.+-]*(?:/[\w.+*<>{}-]*)+|[A-Za-z_][\w+-]*\.(?:%s))(?![\w/])"
                     % "|".join(PATH_EXT))


def list_files():
    try:
        out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                             cwd=ROOT, capture_output=True, text=True, check=True).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: every file but build output
        out = []
        for top, dirs, names in os.walk(ROOT):
            dirs[:] = [d for d in dirs if not (d.startswith("build") or d == ".git")]
            out += [os.path.relpath(os.path.join(top, n), ROOT) for n in names]
    # A file deleted in the work tree but still in the index is gone.
    return sorted(f for f in set(out) if f and os.path.exists(os.path.join(ROOT, f)))


def cpp_comments(text):
    """Returns [(line_number, comment_text)] for every line that holds comment text, with a wrapped
    `//` comment's lines kept separate (joined later)."""
    out = []
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append((line, text[i + 2:j]))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j
            for k, part in enumerate(text[i + 2:j].split("\n")):
                out.append((line + k, part.lstrip(" *")))
            line += text.count("\n", i, j)
            i = j + 2
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i)
            end = n if end < 0 else end
            line += text.count("\n", i, end)
            i = end + len(m.group(1)) + 2
        elif c == '"' or (c == "'" and not (i > 0 and text[i - 1].isalnum())):
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        else:
            i += 1
    return out


def hash_comments(text):
    out = []
    for k, raw in enumerate(text.split("\n"), 1):
        s = raw.lstrip()
        if s.startswith("#!"):
            continue
        # A `#` that starts a comment: at the start of the line, or after a space, outside quotes
        # (good enough for graft's scripts).
        quote = None
        for j, ch in enumerate(raw):
            if quote:
                if ch == quote:
                    quote = None
            elif ch in "'\"":
                quote = ch
            elif ch == "#" and (j == 0 or raw[j - 1] in " \t"):
                out.append((k, raw[j + 1:]))
                break
    return out


def join_runs(comments):
    """Joins consecutive comment lines into runs: [(text, [(offset, line)])], one space per break;
    the offsets map a match in the text back to its line."""
    runs = []
    last = None
    for line, body in comments:
        body = body.strip()
        if runs and last == line - 1:
            text, marks = runs[-1]
            marks.append((len(text) + 1, line))
            runs[-1] = (text + " " + body, marks)
        else:
            runs.append((body, [(0, line)]))
        last = line
    return runs


def line_of(marks, offset):
    line = marks[0][1]
    for off, ln in marks:
        if off <= offset:
            line = ln
    return line


def norm(title):
    return " ".join(title.split())


def main():
    files = list_files()
    file_set = set(files)
    dir_set = set()
    for f in files:
        parts = f.split("/")
        for k in range(1, len(parts)):
            dir_set.add("/".join(parts[:k]))
    basenames = {os.path.basename(f) for f in files}
    all_paths = file_set | dir_set

    dir_names = {os.path.basename(d) for d in dir_set}
    src_ext_re = re.compile(r"\.(h|hpp|cpp|inc|md|py|sh|cmake)$")
    path_ext_re = re.compile(r"\.(%s)$" % "|".join(PATH_EXT))

    def tail_exists(tok):
        return any(p == tok or p.endswith("/" + tok) for p in all_paths)

    def check_path(tok, here, markdown):
        """None when `tok` is not a path this check holds to a rule; else whether it exists."""
        if tok.startswith("./"):
            tok = tok[2:]
        if tok.startswith(("torch/", "aten/", "c10/", "build/", "build-", "$")):
            return None
        if not (tok.endswith("/") or path_ext_re.search(tok)):
            return None
        head = re.split(r"\*|<|\{|\.\.\.", tok)[0]
        if head != tok:  # a pattern: its folder must exist
            if "/" not in head:
                return None
            tok = head[:head.rindex("/") + 1]
        tok_path = tok.rstrip("/")
        first = tok_path.split("/")[0]
        if first in TOP_DIRS and "/" in tok:
            return tok_path in all_paths or tok_path == first
        if first == "graft" and "/" in tok:
            return ("include/" + tok_path) in all_paths
        if markdown:
            return None
        if "/" in tok_path:
            rel = os.path.normpath(os.path.join(os.path.dirname(here), tok_path))
            return rel in all_paths or tail_exists(tok_path)
        if tok.endswith("/"):
            return tok_path in dir_names
        if src_ext_re.search(tok_path):
            return tok_path in basenames
        return None

    defs = {}
    cites = []
    problems = []
    scan = [f for f in files if f.split("/")[0] in SCAN_DIRS or ("/" not in f and f.endswith(".md"))]
    for f in scan:
        name = os.path.basename(f)
        is_md = f.endswith(".md")
        is_cpp = f.endswith(CPP_EXT)
        is_hash = f.endswith(HASH_EXT) or name == "CMakeLists.txt" or f.startswith(".ci/")
        if not (is_md or is_cpp or is_hash):
            continue
        try:
            with open(os.path.join(ROOT, f), encoding="utf-8") as fh:
                text = fh.read()
        except (UnicodeDecodeError, OSError):
            continue
        lines = text.split("\n")
        if is_md:
            # Paragraphs are runs of non-blank lines; a fenced code block's lines count too.
            runs = join_runs([(k, raw) for k, raw in enumerate(lines, 1) if raw.strip()])
        else:
            comments = cpp_comments(text) if is_cpp else hash_comments(text)
            runs = join_runs(comments)
            def_re = DEF_CPP_RE if is_cpp else DEF_HASH_RE
            comment_lines = {ln for ln, _ in comments}
            for k, raw in enumerate(lines, 1):
                m = def_re.match(raw)
                if m:
                    title = norm(m.group(1))
                    defs.setdefault(title, []).append("%s:%d" % (f, k))
                    nxt = lines[k] if k < len(lines) else ""
                    body = nxt.strip().lstrip("/#").strip()
                    if (k + 1) not in comment_lines or not body:
                        problems.append("%s:%d: Note [%s] is defined with no text on the next line"
                                        % (f, k, title))
        for text_run, marks in runs:
            for m in NOTE_RE.finditer(text_run):
                title = norm(m.group(1))
                if title != "...":
                    cites.append((title, f, line_of(marks, m.start())))
            for m in PATH_RE.finditer(text_run):
                tok = m.group(1).rstrip(".,;:)")
                if "<" not in tok:
                    tok = tok.rstrip(">")
                if "://" in text_run[max(0, m.start() - 3):m.start() + 3]:
                    continue
                ok = check_path(tok, f, is_md)
                if ok is False:
                    problems.append("%s:%d: names `%s`, which does not exist"
                                    % (f, line_of(marks, m.start()), tok))

    for title, where in sorted(defs.items()):
        if len(where) > 1:
            problems.append("Note [%s] is defined %d times: %s" % (title, len(where), ", ".join(where)))
    for title, f, line in cites:
        if title not in defs:
            problems.append("%s:%d: cites Note [%s], which is not defined" % (f, line, title))

    for p in problems:
        print(p)
    if problems:
        print("check-notes: %d problem(s)" % len(problems))
        return 1
    print("check-notes: %d Notes, %d citations, all defined once; every path named in a comment exists"
          % (len(defs), len(cites)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
