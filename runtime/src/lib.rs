//! Values, evaluator, primitives.
