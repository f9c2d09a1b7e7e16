//! `import` and `from ... import`: names resolved against the namespaces the
//! stdlib registers in `Interp::modules` (`jax`, `jax.numpy`, `numpy`, `functools`...).
//!
//! There is no search path: arr's modules are built in, so an import never
//! touches the file system and a name arr does not have is an ImportError
//! naming it, at the line of the import. A library with a loader
//! (`Interp::module_loaders`) makes its namespaces at its first import.

use super::Interp;
use crate::error::{Error, ErrorKind, Result};
use crate::value::Value;
use std::rc::Rc;

impl Interp {
    /// The module a dotted path names; with `top`, the module of its first
    /// component (what `import a.b` binds to `a`).
    pub(crate) fn import(&mut self, path: &str, top: bool) -> Result<Value> {
        let module = self.module(path)?;
        if !top {
            return Ok(module);
        }
        let first = path.split('.').next().unwrap_or(path);
        self.module(first)
    }

    fn module(&mut self, path: &str) -> Result<Value> {
        if path == "jax" || path.starts_with("jax.") {
            self.jax_rules = true;
            crate::numpy::follow_jax_dtypes(true);
        }
        if !self.modules.contains_key(path) {
            self.load_library(path)?;
        }
        match self.modules.get(path) {
            Some(m) => Ok(m.clone()),
            None => Err(
                Error::new(ErrorKind::ImportError, format!("No module named '{path}'"))
                    .as_class("ModuleNotFoundError"),
            ),
        }
    }

    /// `from module import name`: a member of the module, else its submodule.
    pub(crate) fn import_from(&mut self, module: &str, name: &str) -> Result<Value> {
        let Value::Module(m) = self.module(module)? else {
            unreachable!("only modules are registered in Interp::modules")
        };
        if let Some(v) = m.attrs.get(name) {
            return Ok(v.clone());
        }
        self.modules
            .get(format!("{module}.{name}").as_str())
            .cloned()
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::ImportError,
                    format!("cannot import name '{name}' from '{module}'"),
                )
            })
    }

    /// `from module import *`: every public member becomes a global.
    pub(crate) fn import_star(&mut self, module: &str) -> Result<()> {
        let Value::Module(m) = self.module(module)? else {
            unreachable!("only modules are registered in Interp::modules")
        };
        for (name, value) in m.attrs.iter().filter(|(n, _)| !n.starts_with('_')) {
            let id = self.interner.intern(name) as usize;
            self.store_global(id, value.clone());
        }
        Ok(())
    }

    /// Run the loader of the library that `path` belongs to, if it has one
    /// that has not run yet.
    pub fn load_library(&mut self, path: &str) -> Result<()> {
        // A library is named by its top module (`optax`) or by a dotted
        // prefix of the path (`jax.example_libraries`).
        let prefixes = path
            .match_indices('.')
            .map(|(i, _)| &path[..i])
            .chain(std::iter::once(path));
        let found = prefixes
            .map(str::to_string)
            .find(|p| self.module_loaders.contains_key(p.as_str()));
        match found.and_then(|p| self.module_loaders.remove(p.as_str())) {
            Some(loader) => loader(self),
            None => Ok(()),
        }
    }

    /// Run every loader that has not run yet (to list every namespace).
    pub fn load_all_libraries(&mut self) -> Result<()> {
        let tops: Vec<Rc<str>> = self.module_loaders.keys().cloned().collect();
        for top in tops {
            self.load_library(&top)?;
        }
        Ok(())
    }

    /// Make `module` importable under its dotted name.
    pub fn add_module(&mut self, module: Value) {
        if let Value::Module(m) = &module {
            self.modules.insert(m.name.as_str().into(), module.clone());
        }
    }
}
