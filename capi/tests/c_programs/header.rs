//! `include/mpi.h` against the reference, MPICH 5.0's standard-ABI
//! `mpi.h`: every constant MPICH's header defines exists in ours with the
//! same value, every type has the same size and (where C can compare
//! types) is compatible, every function (`MPI_` and `PMPI_`) has a
//! compatible prototype, and ours declares nothing MPICH's lacks. Also:
//! the header compiles warning-free as C99, C11 and C++.
//!
//! MPICH's header is read as text by a small parser ([`parse`]): comments
//! and preprocessor lines out, declarations split at top-level `;`,
//! multi-line declarations joined, attribute macros MPICH may add
//! (`MPICH_ATTR_POINTER_WITH_TYPE_TAG(1,3)`, `MPICH_API_PUBLIC`,
//! `__attribute__((...))`) dropped.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use super::{describe, run, succeed, Env, TestFn};

/// A `typedef`, by what C can compare of it.
#[derive(Debug, PartialEq)]
enum Kind {
    /// `typedef struct {...} T` or `typedef enum E {...} T`: a new type
    /// per header, compared by size (and by its fields and enumerators
    /// elsewhere).
    Body,
    /// A function type, `typedef int (T)(...)`, or another name for one.
    Function,
    /// Anything else: pointers, integers.
    Plain,
}

#[derive(Debug)]
struct Typedef {
    name: String,
    /// The declaration without `;`, whitespace collapsed.
    text: String,
    kind: Kind,
}

#[derive(Debug)]
struct Prototype {
    name: String,
    ret: String,
    params: String,
}

/// What a header declares, as far as these tests look.
#[derive(Debug, Default)]
struct Decls {
    /// Object-like macros with their replacement text, in order; a name
    /// defined twice (in `#if` branches) keeps its first definition.
    macros: Vec<(String, String)>,
    /// Function-like macros.
    function_macros: BTreeSet<String>,
    /// Names the header `#undef`s: its own helpers.
    undefined: BTreeSet<String>,
    enumerators: Vec<String>,
    typedefs: Vec<Typedef>,
    functions: Vec<Prototype>,
}

impl Decls {
    fn macro_value(&self, name: &str) -> Option<&str> {
        self.macros
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The constants to compare: every object-like `MPI_` macro with a
    /// value and every `MPI_` enumerator. Left out: function-like macros
    /// (none in the standard ABI; they are not constants); the include
    /// guard (no value); helpers the header `#undef`s again (MPICH's
    /// `MPI_ABI_Aint`, `MPI_ABI_Offset`, `MPI_ABI_Count`); and names
    /// outside the standard's `MPI_` namespace (MPICH's extensions, such
    /// as `MPIX_TYPECLASS_LOGICAL`, and any `MPICH_` macro).
    fn constants(&self) -> Vec<String> {
        let macros = self
            .macros
            .iter()
            .filter(|(n, v)| !v.is_empty() && !self.undefined.contains(n))
            .map(|(n, _)| n);
        let mut seen = BTreeSet::new();
        macros
            .chain(&self.enumerators)
            .filter(|n| n.starts_with("MPI_") && seen.insert(n.as_str()))
            .cloned()
            .collect()
    }

    /// `text` with the header's `#undef`d helper macros replaced by their
    /// first definition (the branch for C99 and GNU compilers in MPICH's
    /// header), as in `typedef MPI_ABI_Aint MPI_Aint`.
    fn expand_helpers(&self, text: &str) -> String {
        let mut out = text.to_string();
        for _ in 0..4 {
            let mut next = String::new();
            for (tok, is_ident) in tokens(&out) {
                match self.macro_value(tok) {
                    Some(v) if is_ident && self.undefined.contains(tok) => next += v,
                    _ => next += tok,
                }
            }
            out = next;
        }
        out
    }
}

/// Splits `s` into identifiers and the text between them.
fn tokens(s: &str) -> Vec<(&str, bool)> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut in_ident = false;
    for (i, c) in s.char_indices() {
        let ident_char = c.is_ascii_alphanumeric() || c == '_';
        if ident_char != in_ident {
            if i > start {
                out.push((&s[start..i], in_ident));
            }
            start = i;
            in_ident = ident_char;
        }
    }
    if start < s.len() {
        out.push((&s[start..], in_ident));
    }
    out
}

fn is_ident(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with(|c: char| c.is_ascii_digit())
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `s` without C comments (string literals kept as they are).
fn strip_comments(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut prev = ' ';
                for d in chars.by_ref() {
                    if prev == '*' && d == '/' {
                        break;
                    }
                    prev = d;
                }
                out.push(' ');
            }
            '/' if chars.peek() == Some(&'/') => {
                for d in chars.by_ref() {
                    if d == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            // A literal ends at its closing quote, or at the end of the
            // line for a stray quote (as in `#error can't`).
            '"' | '\'' => {
                out.push(c);
                while let Some(d) = chars.next() {
                    out.push(d);
                    if d == '\\' {
                        if let Some(e) = chars.next() {
                            out.push(e);
                        }
                    } else if d == c || d == '\n' {
                        break;
                    }
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// The index just past the parenthesis that closes the one at `open`.
fn matching_paren(s: &str, open: usize) -> Option<usize> {
    let mut depth = 0;
    for (i, c) in s[open..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// A declaration without the attribute-like macros and keywords compilers
/// and MPICH add (`__attribute__((...))`, `__declspec(...)`, `MPICH_*`
/// with or without arguments), whitespace collapsed.
fn strip_attributes(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while !rest.is_empty() {
        let ident = rest.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
        let len = rest
            .find(|c: char| (c.is_ascii_alphanumeric() || c == '_') != ident)
            .unwrap_or(rest.len());
        let tok = &rest[..len];
        let attribute =
            ident && (tok == "__attribute__" || tok == "__declspec" || tok.starts_with("MPICH_"));
        rest = &rest[tok.len()..];
        if attribute {
            let after = rest.trim_start();
            if after.starts_with('(') {
                let skip = rest.len() - after.len();
                match matching_paren(rest, skip) {
                    Some(end) => rest = &rest[end..],
                    None => rest = "",
                }
            }
            out.push(' ');
        } else {
            out += tok;
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Reads the declarations of a C header (see the module comment).
fn parse(header: &str) -> Decls {
    let text = strip_comments(header).replace("\\\n", " ");
    let mut d = Decls::default();
    let mut code = String::new();
    for line in text.lines() {
        let t = line.trim_start();
        let Some(directive) = t.strip_prefix('#') else {
            code += line;
            code.push('\n');
            continue;
        };
        let directive = directive.trim_start();
        if let Some(rest) = directive.strip_prefix("define") {
            let rest = rest.trim_start();
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let value = &rest[name.len()..];
            if value.starts_with('(') {
                d.function_macros.insert(name);
            } else if d.macro_value(&name).is_none() {
                d.macros.push((name, value.trim().to_string()));
            }
        } else if let Some(rest) = directive.strip_prefix("undef") {
            d.undefined.insert(rest.trim().to_string());
        }
    }
    // A C++ linkage block is not a declaration.
    let code = code.replace("extern \"C\" {", " ");
    let mut statements = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (i, c) in code.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => start = i + 1, // the end of an extern "C" block
            '}' => depth -= 1,
            ';' if depth == 0 => {
                statements.push(strip_attributes(&code[start..i]));
                start = i + 1;
            }
            _ => {}
        }
    }
    for s in statements {
        let s = s.strip_prefix("extern ").unwrap_or(&s).to_string();
        if let (Some(open), Some(close)) = (s.find('{'), s.rfind('}')) {
            if tokens(&s[..open]).iter().any(|(t, _)| *t == "enum") {
                for e in s[open + 1..close].split(',') {
                    let name = e.split('=').next().unwrap_or("").trim();
                    if is_ident(name) {
                        d.enumerators.push(name.to_string());
                    }
                }
            }
        }
        if s.starts_with("typedef ") {
            if let Some(t) = typedef(&s, &d.typedefs) {
                d.typedefs.push(t);
            }
        } else if let Some(p) = prototype(&s) {
            d.functions.push(p);
        }
    }
    d
}

fn typedef(s: &str, known: &[Typedef]) -> Option<Typedef> {
    let last_ident = |t: &str| {
        tokens(t)
            .into_iter()
            .rev()
            .find(|(_, id)| *id)
            .map(|(t, _)| t.to_string())
    };
    let (name, kind) = if let Some(close) = s.rfind('}') {
        (last_ident(&s[close..])?, Kind::Body)
    } else if let Some(open) = s.find('(') {
        // typedef R (NAME)(...) or typedef R (*NAME)(...)
        let inner = s[open + 1..].split(')').next()?;
        let name = inner.trim_start_matches(['*', ' ']);
        (name.trim().to_string(), Kind::Function)
    } else {
        let name = last_ident(s)?;
        let target = tokens(s)
            .into_iter()
            .filter(|(_, id)| *id)
            .nth(1)
            .map(|(t, _)| t);
        let function = known
            .iter()
            .any(|k| Some(k.name.as_str()) == target && k.kind == Kind::Function);
        let kind = if function {
            Kind::Function
        } else {
            Kind::Plain
        };
        (name, kind)
    };
    is_ident(&name).then(|| Typedef {
        name,
        text: s.to_string(),
        kind,
    })
}

fn prototype(s: &str) -> Option<Prototype> {
    let open = s.find('(')?;
    let close = matching_paren(s, open)?;
    if !s[close..].trim().is_empty() {
        return None;
    }
    let head = s[..open].trim_end();
    let name = tokens(head).last().filter(|(_, id)| *id)?.0;
    let ret = head[..head.len() - name.len()].trim();
    if ret.is_empty() {
        return None;
    }
    Some(Prototype {
        name: name.to_string(),
        ret: ret.to_string(),
        params: s[open + 1..close - 1].trim().to_string(),
    })
}

/// `text` with the whole identifier `name` replaced by `new`, at its first
/// occurrence (`first`) or its last.
fn rename(text: &str, name: &str, new: &str, first: bool) -> String {
    let toks = tokens(text);
    let hits: Vec<usize> = toks
        .iter()
        .enumerate()
        .filter(|(_, (t, id))| *id && *t == name)
        .map(|(i, _)| i)
        .collect();
    let at = if first { hits.first() } else { hits.last() };
    toks.iter()
        .enumerate()
        .map(|(i, (t, _))| if Some(&i) == at { new } else { t })
        .collect()
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

fn mpich_header(env: &Env) -> Result<Decls, String> {
    let (inc, _) = env.mpich()?;
    let d = parse(&read(&inc.join("mpi.h"))?);
    // Guards against a parser that silently reads too little.
    if d.functions.len() < 1300 || d.constants().len() < 300 || d.typedefs.len() < 40 {
        return Err(format!(
            "MPICH's header parsed into only {} functions, {} constants, {} typedefs",
            d.functions.len(),
            d.constants().len(),
            d.typedefs.len()
        ));
    }
    Ok(d)
}

fn our_header(env: &Env) -> Result<Decls, String> {
    read(&env.manifest.join("include/mpi.h")).map(|h| parse(&h))
}

/// Up to 30 items of a list, for a readable failure.
fn some(items: &[String]) -> String {
    let mut s = items
        .iter()
        .take(30)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > 30 {
        s += &format!(" and {} more", items.len() - 30);
    }
    s
}

/// A C program printing `name value` for every constant and layout fact.
fn dump_source(names: &[String], facts: &[String]) -> String {
    let mut src = String::from(
        "#include <stddef.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <mpi.h>\n\
         int main(void) {\n",
    );
    for n in names {
        src += &format!("    printf(\"{n} %lld\\n\", (long long)(intptr_t)({n}));\n");
    }
    for f in facts {
        src += &format!("    printf(\"{f} %lld\\n\", (long long)({f}));\n");
    }
    src += "    return 0;\n}\n";
    src
}

/// The sizes and layout facts compared: `MPI_Status`'s public fields and
/// the size of every type MPICH's header defines (of a pointer to it, for
/// function types).
fn layout_facts(mpich: &Decls) -> Vec<String> {
    let mut facts: Vec<String> = ["MPI_SOURCE", "MPI_TAG", "MPI_ERROR"]
        .iter()
        .map(|f| format!("offsetof(MPI_Status, {f})"))
        .collect();
    for t in &mpich.typedefs {
        facts.push(match t.kind {
            Kind::Function => format!("sizeof({} *)", t.name),
            _ => format!("sizeof({})", t.name),
        });
    }
    facts
}

/// Compiles and runs a dump program against the header in `inc`; returns
/// `name → value`.
fn dump(env: &Env, src: &str, inc: &Path, tag: &str) -> Result<BTreeMap<String, String>, String> {
    let c = env.work.join(format!("constants-{tag}.c"));
    let exe = env.work.join(format!("constants-{tag}"));
    std::fs::write(&c, src).map_err(|e| e.to_string())?;
    succeed(
        Command::new("cc")
            .args(["-std=c11", "-Wall", "-I"])
            .arg(inc)
            .arg("-o")
            .arg(&exe)
            .arg(&c),
    )?;
    let out = succeed(&mut Command::new(&exe))?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.rsplit_once(' '))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect())
}

fn constants_match(env: &Env) -> Result<(), String> {
    let mpich = mpich_header(env)?;
    let ours = our_header(env)?;
    let want = mpich.constants();
    let have: BTreeSet<String> = ours.constants().into_iter().collect();
    let mut problems = Vec::new();
    let missing: Vec<String> = want
        .iter()
        .filter(|n| !have.contains(*n))
        .cloned()
        .collect();
    if !missing.is_empty() {
        problems.push(format!("missing from ours: {}", some(&missing)));
    }
    let wanted: BTreeSet<&String> = want.iter().collect();
    let extra: Vec<String> = have
        .iter()
        .filter(|n| !wanted.contains(n))
        .cloned()
        .collect();
    if !extra.is_empty() {
        problems.push(format!("not in MPICH's header: {}", some(&extra)));
    }
    let common: Vec<String> = want.into_iter().filter(|n| have.contains(n)).collect();
    let facts = layout_facts(&mpich);
    let src = dump_source(&common, &facts);
    let (inc, _) = env.mpich()?;
    let a = dump(env, &src, &env.manifest.join("include"), "o2g")?;
    let b = dump(env, &src, &inc, "mpich")?;
    if a.len() != common.len() + facts.len() || b.len() != a.len() {
        return Err(format!(
            "the dump programs printed {} and {} of {} values",
            a.len(),
            b.len(),
            common.len() + facts.len()
        ));
    }
    let differ: Vec<String> = a
        .iter()
        .filter(|(k, v)| b.get(*k) != Some(*v))
        .map(|(k, v)| format!("{k}: o2g {v}, MPICH {}", b[k]))
        .collect();
    if !differ.is_empty() {
        problems.push(format!("values differ: {}", some(&differ)));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// The C file of the prototype test: our header, then each of MPICH's
/// function prototypes and comparable typedefs under a new name, with a
/// static assertion that ours has the same type.
fn prototype_check_source(mpich: &Decls) -> String {
    let mut src = String::from("#include <mpi.h>\n\n");
    for t in mpich.typedefs.iter().filter(|t| t.kind != Kind::Body) {
        let copy = format!("o2g_check_{}", t.name);
        let text = rename(&t.text, &t.name, &copy, t.kind == Kind::Function);
        src += &format!(
            "{};\n_Static_assert(__builtin_types_compatible_p({}, {copy}), \"{}\");\n",
            mpich.expand_helpers(&text),
            t.name,
            t.name
        );
    }
    for f in &mpich.functions {
        let n = &f.name;
        src += &format!(
            "{} o2g_check_{n}({});\n_Static_assert(__builtin_types_compatible_p(\
             __typeof__({n}), __typeof__(o2g_check_{n})), \"{n}\");\n",
            f.ret,
            mpich.expand_helpers(&f.params)
        );
    }
    src
}

/// The functions our header declares once macros are expanded.
fn our_functions(env: &Env) -> Result<BTreeSet<String>, String> {
    let c = env.work.join("our-functions.c");
    std::fs::write(&c, "#include <mpi.h>\n").map_err(|e| e.to_string())?;
    let out = succeed(
        Command::new("cc")
            .args(["-E", "-P", "-I"])
            .arg(env.manifest.join("include"))
            .arg(&c),
    )?;
    Ok(parse(&String::from_utf8_lossy(&out.stdout))
        .functions
        .into_iter()
        .map(|f| f.name)
        .filter(|n| n.starts_with("MPI_") || n.starts_with("PMPI_"))
        .collect())
}

fn prototypes_match(env: &Env) -> Result<(), String> {
    let mpich = mpich_header(env)?;
    let c = env.work.join("prototypes.c");
    std::fs::write(&c, prototype_check_source(&mpich)).map_err(|e| e.to_string())?;
    let out = run(Command::new("cc")
        .args(["-std=c11", "-fsyntax-only", "-fmax-errors=0", "-I"])
        .arg(env.manifest.join("include"))
        .arg(&c)
        .env("LC_ALL", "C"))?;
    let mut problems = Vec::new();
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let (mut differ, mut missing, mut other) = (Vec::new(), Vec::new(), Vec::new());
        for line in stderr.lines().filter(|l| l.contains("error:")) {
            if line.contains("static assertion is not an integer") {
                continue; // follows from an undeclared name, reported below
            }
            if let Some(n) = line.split("static assertion failed: \"").nth(1) {
                differ.push(n.trim_end_matches('"').to_string());
            } else if line.contains("undeclared") {
                missing.push(line.split('\'').nth(1).unwrap_or(line).to_string());
            } else {
                other.push(line.to_string());
            }
        }
        for (what, list) in [
            ("types differ from MPICH's", differ),
            ("not declared in ours", missing),
            ("other errors", other),
        ] {
            if !list.is_empty() {
                problems.push(format!("{what} ({}): {}", list.len(), some(&list)));
            }
        }
        if problems.is_empty() {
            problems.push(format!("{} failed: {}", c.display(), describe(&out)));
        }
    }
    let theirs: BTreeSet<&String> = mpich.functions.iter().map(|f| &f.name).collect();
    let extra: Vec<String> = our_functions(env)?
        .into_iter()
        .filter(|n| !theirs.contains(n))
        .collect();
    if !extra.is_empty() {
        problems.push(format!(
            "declared in ours, not in MPICH's: {}",
            some(&extra)
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// Compiles a program using every constant of the header with `compiler`
/// and `flags` and `-Wall -Wextra -Wpedantic -Werror`.
fn compiles_cleanly(env: &Env, compiler: &str, flags: &[&str], tag: &str) -> Result<(), String> {
    let names = our_header(env)?.constants();
    let src = env.work.join(format!("clean-{tag}.c"));
    std::fs::write(&src, dump_source(&names, &[])).map_err(|e| e.to_string())?;
    let mut cmd = Command::new(compiler);
    if compiler.ends_with("++") {
        cmd.args(["-x", "c++"]);
    }
    succeed(
        cmd.args(flags)
            .args(["-Wall", "-Wextra", "-Wpedantic", "-Werror", "-c", "-o"])
            .arg(env.work.join(format!("clean-{tag}.o")))
            .arg("-I")
            .arg(env.manifest.join("include"))
            .arg(&src),
    )
    .map(drop)
}

/// The parser on declarations shaped as MPICH writes them elsewhere.
fn parser_self_test() -> Result<(), String> {
    let h = "#ifndef H\n#define H\n#if 0\n#error this header can't be used\n#endif\n\
             #define HELPER_T long /* C99 */\n#define HELPER_T int\n\
             #define MPI_A 0x10\n#define MPI_F(x) ((x)+1)\n#define MPI_C \\\n  ((void*)3)\n\
             typedef HELPER_T MPI_T1;\n#undef HELPER_T\n\
             #if defined(__cplusplus)\nextern \"C\" {\n#endif\n\
             enum { MPI_E1 = 1, /* one */ MPI_E2 = 2 };\n\
             typedef enum E { MPI_E3 = 3 } MPI_E;\n\
             typedef struct { int a; int b; } MPI_S;\n\
             typedef int (MPI_Fn)(MPI_S *s, int n);\ntypedef MPI_Fn MPI_Fn_alias;\n\
             int MPI_X(const void *buf, int count,\n          MPI_S *s) \
             MPICH_ATTR_POINTER_WITH_TYPE_TAG(1,2) MPICH_API_PUBLIC;\n\
             double PMPI_Y(void) __attribute__((deprecated(\"no\")));\n\
             // int MPI_Commented(void);\n\
             #if defined(__cplusplus)\n}\n#endif\n#endif\n";
    let d = parse(h);
    let mut problems = Vec::new();
    let check = |ok: bool, what: &str, problems: &mut Vec<String>| {
        if !ok {
            problems.push(what.to_string());
        }
    };
    check(
        d.constants() == ["MPI_A", "MPI_C", "MPI_E1", "MPI_E2", "MPI_E3"],
        "constants",
        &mut problems,
    );
    check(
        d.macro_value("MPI_C") == Some("((void*)3)"),
        "continued macro",
        &mut problems,
    );
    check(
        d.function_macros.contains("MPI_F"),
        "function-like macro",
        &mut problems,
    );
    let funcs: Vec<String> = d
        .functions
        .iter()
        .map(|f| format!("{} {}({})", f.ret, f.name, f.params))
        .collect();
    check(
        funcs
            == [
                "int MPI_X(const void *buf, int count, MPI_S *s)",
                "double PMPI_Y(void)",
            ],
        "prototypes",
        &mut problems,
    );
    let types: Vec<(&str, &Kind)> = d
        .typedefs
        .iter()
        .map(|t| (t.name.as_str(), &t.kind))
        .collect();
    check(
        types
            == [
                ("MPI_T1", &Kind::Plain),
                ("MPI_E", &Kind::Body),
                ("MPI_S", &Kind::Body),
                ("MPI_Fn", &Kind::Function),
                ("MPI_Fn_alias", &Kind::Function),
            ],
        "typedefs",
        &mut problems,
    );
    check(
        d.expand_helpers(&d.typedefs[0].text) == "typedef long MPI_T1",
        "helper expansion",
        &mut problems,
    );
    check(
        rename(&d.typedefs[3].text, "MPI_Fn", "o2g_check_MPI_Fn", true)
            == "typedef int (o2g_check_MPI_Fn)(MPI_S *s, int n)",
        "rename",
        &mut problems,
    );
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("wrong {}: {d:#?}", problems.join(", ")))
    }
}

/// The header tests.
pub(super) fn tests(env: &Env) -> Vec<(String, TestFn<'_>)> {
    let mut t: Vec<(String, TestFn<'_>)> = vec![
        (
            "header_parser_reads_multiline_prototypes_and_strips_attributes".into(),
            Box::new(parser_self_test),
        ),
        (
            "header_constants_match_mpich_standard_abi".into(),
            Box::new(move || constants_match(env)),
        ),
        (
            "header_prototypes_match_mpich_standard_abi".into(),
            Box::new(move || prototypes_match(env)),
        ),
    ];
    for (tag, compiler, flags) in [
        ("c99", "gcc", &["-std=c99"][..]),
        ("c11", "gcc", &["-std=c11"][..]),
        ("cxx", "g++", &[][..]),
        ("cxx11", "g++", &["-std=c++11"][..]),
    ] {
        t.push((
            format!("header_compiles_cleanly_{tag}"),
            Box::new(move || compiles_cleanly(env, compiler, flags, tag)),
        ));
    }
    t
}
