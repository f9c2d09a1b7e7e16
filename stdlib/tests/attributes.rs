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
