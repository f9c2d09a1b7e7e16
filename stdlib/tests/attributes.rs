//! Attribute lookup and completion read the same tables: every attribute
//! that completion lists for a value resolves on it, and `x.sha<Tab>`
//! offers both array properties that start so.

use arr_runtime::eval::attr::AttrKind;
use arr_runtime::Session;

fn session() -> Session {
    arr_testkit::session_with(
        "x = ones((2, 3))\n\
         m = mesh((2,), ('data',))\n\
         xs = shard(ones((4, 3)), m, P('data'))\n\
         def f(a):\n    \"A docstring.\"\n    return a * 2.0\n\
         g = jit(f)\n\
         h = jit(f, in_shardings=NamedSharding(m, P('data')))\n\
         t = table([{'a': 1, 'b': 2}])\n",
    )
}

#[test]
fn completing_an_array_attribute_offers_shape_and_sharding() {
    let s = session();
    let (start, names) = s.complete("x.sha");
    assert_eq!(start, 2);
    assert_eq!(names, ["shape", "sharding"]);
    // Methods come from the same table as properties.
    let (_, names) = s.complete("xs.su");
    assert_eq!(names, ["sum"]);
}

#[test]
fn every_listed_attribute_resolves() {
    let mut s = session();
    for expr in [
        "x",
        "xs",
        "xs.sharding",
        "m",
        "P('data')",
        "t",
        "float32",
        "f",
        "sum",
        "g",
        "h",
        "random",
        "[1, 2]",
        "{'a': 1}",
        "'text'",
        "2.5",
    ] {
        let v = s
            .run_entry(expr)
            .unwrap_or_else(|e| panic!("{expr}: {}", e.render()))
            .unwrap_or_else(|| panic!("{expr}: no value"));
        let attrs = s.interp.attributes(&v);
        for a in &attrs {
            if let Err(e) = s.interp.get_attr(&v, &a.name) {
                panic!(
                    "{expr}.{} is listed but does not resolve: {}",
                    a.name, e.message
                );
            }
        }
        // Partition specs and numbers have no attributes.
        let none = ["P('data')", "2.5"];
        assert_eq!(attrs.is_empty(), none.contains(&expr), "{expr}: {attrs:?}");
    }
}

#[test]
fn arrays_list_every_property_and_their_methods() {
    let mut s = session();
    let x = s.run_entry("x").unwrap().unwrap();
    let attrs = s.interp.attributes(&x);
    let props: Vec<&str> = attrs
        .iter()
        .filter(|a| a.kind == AttrKind::Property)
        .map(|a| a.name.as_str())
        .collect();
    assert_eq!(
        props,
        [
            "shape",
            "ndim",
            "size",
            "dtype",
            "weak_type",
            "T",
            "real",
            "imag",
            "itemsize",
            "at",
            "nbytes",
            "device",
            "sharding",
            "addressable_shards",
            "committed",
            "is_fully_addressable"
        ]
    );
    assert!(
        attrs
            .iter()
            .filter(|a| a.kind == AttrKind::Property)
            .all(|a| !a.doc.is_empty()),
        "{attrs:?}"
    );
    let sum = attrs.iter().find(|a| a.name == "sum").expect("x.sum");
    assert_eq!(sum.kind, AttrKind::Method);
    // A value's own attributes: a jitted function's methods.
    let g = s.run_entry("g").unwrap().unwrap();
    let names: Vec<String> = s
        .interp
        .attributes(&g)
        .into_iter()
        .map(|a| a.name)
        .collect();
    assert_eq!(names, ["why", "ir", "lower", "trace", "kernels"]);
}

/// Builtins' signatures are read by a fast path at start-up; the language's
/// parser is the reference. Every builtin, method and module member agrees.
#[test]
fn every_builtin_signature_reads_as_the_parser_reads_it() {
    use arr_runtime::Value;
    let s = arr_stdlib::session();
    let mut signatures: Vec<String> = Vec::new();
    let mut add = |v: &Value| {
        if let Value::Builtin(b) = v {
            signatures.push(b.signature.clone());
        }
    };
    s.interp.builtins.iter().flatten().for_each(&mut add);
    s.interp.methods.values().for_each(&mut add);
    for m in s.interp.modules.values() {
        if let Value::Module(m) = m {
            m.attrs.values().for_each(&mut add);
        }
    }
    assert!(signatures.len() > 1000, "{} signatures", signatures.len());
    let disagree: Vec<&String> = signatures
        .iter()
        .filter(|sig| !arr_runtime::builtin::signature_paths_agree(sig))
        .collect();
    assert!(disagree.is_empty(), "{disagree:?}");
    // Hostile and unusual forms: each either reads the same or goes to the parser.
    for sig in [
        "f(a, b=1, *args, c=None, **kw)",
        "f(x, sep=',', end='\\n')",
        "f(a=-1.5e-3, b=0, c=00, d=1_000, e=0x10, f=(1, 2), g='a=b')",
        "f(*, key=None)",
        "f(a, /, b)",
        "f(a=..., b=True, c=False, d=\"x(y)\")",
        "f(a=1e400, b=-0.0, c=9223372036854775808)",
        "f()",
        "f(a,)",
    ] {
        assert!(arr_runtime::builtin::signature_paths_agree(sig), "{sig}");
    }
}
