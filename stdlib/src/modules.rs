//! The importable namespaces: `jax`, `jax.numpy`, `jax.lax`, `numpy`,
//! `functools`, ... as tables over arr's builtins, so a JAX program's
//! `import` lines work unmodified while `.arr` scripts keep the short names.
//!
//! A namespace holds the same values as the globals (`jnp.arange is arange`):
//! it is a view, not a second implementation. (The exceptions: numpy's
//! functions are the same functions with NumPy's 64-bit default dtypes,
//! returning NumPy arrays, and jax.numpy's
//! and jax.random's are the same functions behind JAX's argument rules:
//! lists refused where JAX does, `ARRAYLIKE`, and 64-bit dtypes truncated
//! without x64, so `jnp.arange is arange` is False.) Each row below lists a module's
//! members as words: `name` is the builtin `name`, `name=other` the builtin
//! `other` (`other` may be `module.member` of a builtin module, such as
//! `random.normal`), `name=@dotted.module` another namespace of this table,
//! and `*module` every member of a builtin module (`*random`). Rows come
//! before the rows that name them with `@`.

use arr_runtime::{numpy, Builtin, Interp, Value};
use std::collections::HashMap;
use std::rc::Rc;

/// (dotted name, documentation, members).
const MODULES: &[(&str, &str, &str)] = &[
    (
        "jax.numpy.linalg",
        "Linear algebra, as jax.numpy.linalg.",
        "norm inv solve det slogdet cholesky eigh eigvalsh svd qr pinv matrix_rank matrix_power \
         lstsq eig eigvals tensorsolve multi_dot trace=linalg_trace",
    ),
    (
        "jax.numpy.fft",
        "Discrete Fourier transforms, as jax.numpy.fft.",
        "fft ifft rfft irfft fft2 ifft2 rfft2 irfft2 fftn ifftn rfftn irfftn fftfreq rfftfreq fftshift ifftshift",
    ),
    (
        "jax.numpy",
        "NumPy's API on arr arrays, as jax.numpy: float32 by default, JAX's promotion rules.",
        NUMPY,
    ),
    (
        "jax.lax",
        "The primitives under jax.numpy, as jax.lax: control flow, collectives, slicing.",
        "cond switch while_loop fori_loop scan map=_lax_map associative_scan select=_lax_select select_n=_lax_select_n \
         dynamic_slice dynamic_update_slice dynamic_slice_in_dim dynamic_update_slice_in_dim \
         dynamic_index_in_dim dynamic_update_index_in_dim slice=_lax_slice slice_in_dim=_lax_slice_in_dim index_in_dim=_lax_index_in_dim \
         psum pmean pmax pmin all_gather psum_scatter all_to_all ppermute axis_index axis_size \
         pshuffle pbroadcast \
         stop_gradient top_k rsqrt integer_pow dot dot_general conv_general_dilated conv=_lax_conv \
         conv_with_general_padding=_lax_conv_with_general_padding ConvDimensionNumbers=_lax_ConvDimensionNumbers conv_dimension_numbers=_lax_conv_dimension_numbers \
         reduce_window=_lax_reduce_window reduce=_lax_reduce batch_matmul=_lax_batch_matmul \
         optimization_barrier=_lax_optimization_barrier igamma=_jsp_gammainc igammac=_jsp_gammaincc \
         betainc=_jsp_betainc polygamma=_jsp_polygamma zeta=_jsp_zeta \
         bessel_i0e=_jsp_i0e \
         reduce_sum reduce_max reduce_min reduce_prod argmax=_lax_argmax argmin=_lax_argmin \
         sort sort_key_val=_lax_sort_key_val cumsum=_lax_cumsum cumprod=_lax_cumprod \
         cummax=_lax_cummax cummin=_lax_cummin cumlogsumexp=_lax_cumlogsumexp \
         add sub=subtract mul=multiply div=_lax_div rem=_lax_rem neg=negative max=maximum min=minimum abs sign floor ceil round \
         exp exp2 log log1p expm1 pow=power sqrt cbrt sin cos tan asin=arcsin acos=arccos atan=arctan atan2=arctan2 sinh cosh tanh asinh=arcsinh acosh=arccosh atanh=arctanh \
         logistic erf erfc=_lax_erfc erf_inv=erfinv lgamma digamma is_finite=isfinite square reciprocal \
         eq=equal ne=not_equal lt=less le=less_equal gt=greater ge=greater_equal bitwise_and=bitwise_and bitwise_or bitwise_xor bitwise_not=invert \
         shift_left=left_shift shift_right_logical=_lax_shift_right_logical shift_right_arithmetic=right_shift population_count clz \
         nextafter clamp=_lax_clamp convert_element_type=_lax_convert_element_type broadcast=_lax_broadcast broadcast_in_dim=_lax_broadcast_in_dim reshape squeeze \
         expand_dims transpose rev=_lax_rev pad=_lax_pad concatenate iota broadcasted_iota=_lax_broadcasted_iota full full_like \
         collapse=_lax_collapse tie_in=_lax_tie_in complex real imag conj with_sharding_constraint \
         pcast pvary",
    ),
    ("jax.random", "Random numbers from explicit keys, as jax.random.", "*random"),
    (
        "jax.nn.initializers",
        "Parameter initialisers, as jax.nn.initializers: functions (key, shape, dtype) -> array.",
        "zeros=_init_zeros ones=_init_ones constant=_init_constant normal=_init_normal \
         uniform=_init_uniform truncated_normal=_init_truncated_normal \
         variance_scaling=_init_variance_scaling lecun_normal lecun_uniform \
         glorot_normal glorot_uniform xavier_normal=glorot_normal xavier_uniform=glorot_uniform \
         he_normal he_uniform kaiming_normal=he_normal kaiming_uniform=he_uniform \
         orthogonal=_init_orthogonal delta_orthogonal=_init_delta_orthogonal",
    ),
    (
        "jax.nn",
        "Activations and friends, as jax.nn.",
        "relu relu6 sigmoid log_sigmoid softplus soft_sign silu swish gelu elu celu selu \
         leaky_relu hard_tanh hard_sigmoid hard_silu hard_swish glu tanh logsumexp softmax \
         log_softmax one_hot standardize dot_product_attention sparse_plus \
         sparse_sigmoid squareplus mish identity=_nn_identity log1mexp=_nn_log1mexp \
         initializers=@jax.nn.initializers",
    ),
    (
        "jax.tree_util",
        "Pytrees: nested lists, tuples, dicts (and registered classes) of leaves, as jax.tree_util.",
        "tree_map tree_leaves tree_flatten tree_unflatten tree_structure tree_all tree_reduce \
         tree_transpose tree_flatten_with_path tree_map_with_path tree_leaves_with_path keystr \
         tree_any register_pytree_node register_pytree_node_class register_dataclass register_static \
         register_pytree_with_keys register_pytree_with_keys_class Partial=partial \
         DictKey SequenceKey GetAttrKey FlattenedIndexKey all_leaves=_tree_all_leaves",
    ),
    (
        "jax.tree",
        "Pytrees, as jax.tree: the short names of jax.tree_util.",
        "map=tree_map leaves=tree_leaves flatten=tree_flatten unflatten=tree_unflatten \
         structure=tree_structure all=tree_all any=tree_any reduce=tree_reduce transpose=tree_transpose \
         flatten_with_path=tree_flatten_with_path map_with_path=tree_map_with_path \
         leaves_with_path=tree_leaves_with_path broadcast=_tree_broadcast",
    ),
    (
        "jax.sharding",
        "Meshes and shardings, as jax.sharding.",
        "Mesh NamedSharding PartitionSpec P AxisType set_mesh use_mesh get_abstract_mesh \
         reshard auto_axes explicit_axes SingleDeviceSharding AbstractMesh=_sharding_AbstractMesh \
         use_abstract_mesh=_sharding_use_abstract_mesh",
    ),
    (
        "jax.debug",
        "Debugging inside transformations, as jax.debug.",
        "print=debug_print visualize_array_sharding=visualize_sharding \
         inspect_array_sharding=_debug_inspect_array_sharding \
         callback=debug_callback breakpoint=debug_breakpoint",
    ),
    (
        "jax.errors",
        "JAX's error classes, as jax.errors.",
        "ConcretizationTypeError TracerBoolConversionError TracerIntegerConversionError \
         TracerArrayConversionError UnexpectedTracerError NonConcreteBooleanIndexError \
         KeyReuseError JaxRuntimeError",
    ),
    (
        "jax.experimental.shard_map",
        "shard_map's older home, as jax.experimental.shard_map.",
        "shard_map",
    ),
    (
        "jax.flatten_util",
        "A pytree of arrays as one vector, as jax.flatten_util.",
        "ravel_pytree=_flatten_util_ravel_pytree",
    ),
    (
        "jax.experimental.mesh_utils",
        "Device grids for meshes, as jax.experimental.mesh_utils.",
        "create_device_mesh=_mesh_utils_create_device_mesh",
    ),
    (
        "jax.experimental.checkify",
        "Checks as values, as jax.experimental.checkify.",
        "checkify=_checkify_checkify check=_checkify_check debug_check=_checkify_debug_check \
         check_error=_checkify_check_error Error=_checkify_Error \
         JaxRuntimeError=_checkify_JaxRuntimeError FailedCheckError=_checkify_FailedCheckError \
         NaNError=_checkify_NaNError DivisionByZeroError=_checkify_DivisionByZeroError \
         OOBError=_checkify_OOBError user_checks=_checkify_user_checks \
         nan_checks=_checkify_nan_checks index_checks=_checkify_index_checks \
         div_checks=_checkify_div_checks float_checks=_checkify_float_checks \
         automatic_checks=_checkify_automatic_checks all_checks=_checkify_all_checks",
    ),
    (
        "jax.experimental",
        "Experimental APIs, as jax.experimental.",
        "shard_map=@jax.experimental.shard_map mesh_utils=@jax.experimental.mesh_utils io_callback \
         checkify=@jax.experimental.checkify",
    ),
    (
        "jax._src.xla_bridge",
        "The one name of JAX's private backend module that documentation programs use.",
        "backends_are_initialized=_xla_bridge_backends_are_initialized",
    ),
    ("jax._src", "JAX's private modules (only what documentation programs use).", "xla_bridge=@jax._src.xla_bridge"),
    ("jax.distributed", "Jobs of several processes, as jax.distributed.", "*distributed"),
    (
        "jax.checkpoint_policies",
        "What jax.checkpoint keeps, as jax.checkpoint_policies (arr keeps everything).",
        "everything_saveable=_ckpt_everything_saveable nothing_saveable=_ckpt_nothing_saveable \
         dots_saveable=_ckpt_dots_saveable checkpoint_dots=_ckpt_dots_saveable \
         dots_with_no_batch_dims_saveable=_ckpt_dots_saveable \
         save_only_these_names=_ckpt_save_only_these_names \
         save_anything_except_these_names=_ckpt_save_anything_except_these_names \
         save_any_names_but_these=_ckpt_save_anything_except_these_names \
         save_and_offload_only_these_names=_ckpt_save_and_offload_only_these_names \
         offload_dot_with_no_batch_dims=_ckpt_offload_dot_with_no_batch_dims",
    ),
    (
        "jax.ad_checkpoint",
        "Naming values for checkpoint policies, as jax.ad_checkpoint.",
        "checkpoint checkpoint_name checkpoint_policies=@jax.checkpoint_policies \
         print_saved_residuals saved_residuals",
    ),
    (
        "jax.dtypes",
        "Dtypes, as jax.dtypes.",
        "bfloat16 float0 canonicalize_dtype issubdtype prng_key=_dtypes_prng_key",
    ),
    ("jax.test_util", "Gradient checks, as jax.test_util.", "check_grads"),
    ("jax.ref", "Mutable array refs, as jax.ref.", "new_ref freeze Ref"),
    (
        "jax.scipy.stats.norm",
        "The norm distribution, as jax.scipy.stats.norm.",
        "logpdf=_jsp_norm_logpdf pdf=_jsp_norm_pdf cdf=_jsp_norm_cdf logcdf=_jsp_norm_logcdf sf=_jsp_norm_sf logsf=_jsp_norm_logsf ppf=_jsp_norm_ppf isf=_jsp_norm_isf",
    ),
    (
        "jax.scipy.stats.uniform",
        "The uniform distribution, as jax.scipy.stats.uniform.",
        "logpdf=_jsp_uniform_logpdf pdf=_jsp_uniform_pdf cdf=_jsp_uniform_cdf ppf=_jsp_uniform_ppf",
    ),
    (
        "jax.scipy.stats.expon",
        "The expon distribution, as jax.scipy.stats.expon.",
        "logpdf=_jsp_expon_logpdf pdf=_jsp_expon_pdf cdf=_jsp_expon_cdf sf=_jsp_expon_sf ppf=_jsp_expon_ppf",
    ),
    (
        "jax.scipy.stats.laplace",
        "The laplace distribution, as jax.scipy.stats.laplace.",
        "logpdf=_jsp_laplace_logpdf pdf=_jsp_laplace_pdf cdf=_jsp_laplace_cdf",
    ),
    (
        "jax.scipy.stats.logistic",
        "The logistic distribution, as jax.scipy.stats.logistic.",
        "logpdf=_jsp_logistic_logpdf pdf=_jsp_logistic_pdf cdf=_jsp_logistic_cdf sf=_jsp_logistic_sf ppf=_jsp_logistic_ppf isf=_jsp_logistic_isf",
    ),
    (
        "jax.scipy.stats.cauchy",
        "The cauchy distribution, as jax.scipy.stats.cauchy.",
        "logpdf=_jsp_cauchy_logpdf pdf=_jsp_cauchy_pdf cdf=_jsp_cauchy_cdf ppf=_jsp_cauchy_ppf",
    ),
    (
        "jax.scipy.stats.t",
        "The t distribution, as jax.scipy.stats.t.",
        "logpdf=_jsp_t_logpdf pdf=_jsp_t_pdf",
    ),
    (
        "jax.scipy.stats.beta",
        "The beta distribution, as jax.scipy.stats.beta.",
        "logpdf=_jsp_beta_logpdf pdf=_jsp_beta_pdf cdf=_jsp_beta_cdf",
    ),
    (
        "jax.scipy.stats.gamma",
        "The gamma distribution, as jax.scipy.stats.gamma.",
        "logpdf=_jsp_gamma_logpdf pdf=_jsp_gamma_pdf cdf=_jsp_gamma_cdf",
    ),
    (
        "jax.scipy.stats.chi2",
        "The chi2 distribution, as jax.scipy.stats.chi2.",
        "logpdf=_jsp_chi2_logpdf pdf=_jsp_chi2_pdf cdf=_jsp_chi2_cdf",
    ),
    (
        "jax.scipy.stats.poisson",
        "The poisson distribution, as jax.scipy.stats.poisson.",
        "logpmf=_jsp_poisson_logpmf pmf=_jsp_poisson_pmf cdf=_jsp_poisson_cdf",
    ),
    (
        "jax.scipy.stats.bernoulli",
        "The bernoulli distribution, as jax.scipy.stats.bernoulli.",
        "logpmf=_jsp_bernoulli_logpmf pmf=_jsp_bernoulli_pmf cdf=_jsp_bernoulli_cdf",
    ),
    (
        "jax.scipy.stats.geom",
        "The geom distribution, as jax.scipy.stats.geom.",
        "logpmf=_jsp_geom_logpmf pmf=_jsp_geom_pmf",
    ),
    (
        "jax.scipy.stats.dirichlet",
        "The dirichlet distribution, as jax.scipy.stats.dirichlet.",
        "logpdf=_jsp_dirichlet_logpdf pdf=_jsp_dirichlet_pdf",
    ),
    (
        "jax.scipy.stats.multivariate_normal",
        "The multivariate_normal distribution, as jax.scipy.stats.multivariate_normal.",
        "logpdf=_jsp_multivariate_normal_logpdf pdf=_jsp_multivariate_normal_pdf",
    ),
    (
        "jax.scipy.stats",
        "Distributions, as jax.scipy.stats.",
        "norm=@jax.scipy.stats.norm uniform=@jax.scipy.stats.uniform expon=@jax.scipy.stats.expon laplace=@jax.scipy.stats.laplace logistic=@jax.scipy.stats.logistic cauchy=@jax.scipy.stats.cauchy t=@jax.scipy.stats.t beta=@jax.scipy.stats.beta gamma=@jax.scipy.stats.gamma chi2=@jax.scipy.stats.chi2 poisson=@jax.scipy.stats.poisson bernoulli=@jax.scipy.stats.bernoulli geom=@jax.scipy.stats.geom dirichlet=@jax.scipy.stats.dirichlet multivariate_normal=@jax.scipy.stats.multivariate_normal",
    ),
    (
        "jax.scipy.special",
        "Special functions, as jax.scipy.special.",
        "erf erfc=_lax_erfc erfinv gammaln=lgamma digamma psi=digamma logsumexp softmax \
         log_softmax expit=sigmoid logit=_jsp_logit xlogy=_jsp_xlogy xlog1py=_jsp_xlog1py \
         entr=_jsp_entr rel_entr=_jsp_rel_entr kl_div=_jsp_kl_div ndtr=_jsp_ndtr \
         ndtri=_jsp_ndtri log_ndtr=_jsp_log_ndtr gamma=_jsp_gamma beta=_jsp_beta \
         betaln=_jsp_betaln factorial=_jsp_factorial comb=_jsp_comb poch=_jsp_poch \
         multigammaln=_jsp_multigammaln gammainc=_jsp_gammainc gammaincc=_jsp_gammaincc \
         betainc=_jsp_betainc zeta=_jsp_zeta polygamma=_jsp_polygamma i0 i0e=_jsp_i0e",
    ),
    (
        "jax.scipy.linalg",
        "Linear algebra with SciPy's conventions, as jax.scipy.linalg.",
        "solve_triangular=_jsp_solve_triangular cholesky=_jsp_cholesky cho_factor=_jsp_cho_factor \
         cho_solve=_jsp_cho_solve expm=_jsp_expm block_diag=_jsp_block_diag toeplitz=_jsp_toeplitz \
         qr=_jsp_qr solve=_jsp_solve eigh=_jsp_eigh svd=_jsp_svd inv det \
         lu=_jsp_lu lu_factor=_jsp_lu_factor lu_solve=_jsp_lu_solve",
    ),
    (
        "jax.scipy.optimize",
        "Minimisation (BFGS) with SciPy's conventions, as jax.scipy.optimize.",
        "minimize=_jsp_minimize OptimizeResults=_jsp_OptimizeResults line_search=_jsp_line_search",
    ),
    (
        "jax.scipy",
        "SciPy's API on arr arrays, as jax.scipy: special functions, distributions, linear algebra, optimisation.",
        "special=@jax.scipy.special stats=@jax.scipy.stats linalg=@jax.scipy.linalg optimize=@jax.scipy.optimize",
    ),
    (
        "jax.example_libraries.optimizers",
        "JAX's example optimizers, as jax.example_libraries.optimizers: (init, update, get_params) triples over pytrees.",
        "optimizer=_jopt_optimizer Optimizer=_jopt_Optimizer OptimizerState=_jopt_OptimizerState \
         sgd=_jopt_sgd momentum=_jopt_momentum nesterov=_jopt_nesterov adagrad=_jopt_adagrad \
         rmsprop=_jopt_rmsprop rmsprop_momentum=_jopt_rmsprop_momentum adam=_jopt_adam adamax=_jopt_adamax sm3=_jopt_sm3 \
         constant=_jopt_constant exponential_decay=_jopt_exponential_decay inverse_time_decay=_jopt_inverse_time_decay \
         polynomial_decay=_jopt_polynomial_decay piecewise_constant=_jopt_piecewise_constant make_schedule=_jopt_make_schedule \
         l2_norm=_jopt_l2_norm clip_grads=_jopt_clip_grads JoinPoint=_jopt_JoinPoint \
         unpack_optimizer_state=_jopt_unpack_optimizer_state pack_optimizer_state=_jopt_pack_optimizer_state",
    ),
    (
        "jax.example_libraries.stax",
        "JAX's example neural-network layers, as jax.example_libraries.stax: (init_fun, apply_fun) pairs.",
        "Dense=_stax_Dense GeneralConv=_stax_GeneralConv Conv=_stax_Conv GeneralConvTranspose=_stax_GeneralConvTranspose \
         Conv1DTranspose=_stax_Conv1DTranspose ConvTranspose=_stax_ConvTranspose BatchNorm=_stax_BatchNorm \
         elementwise=_stax_elementwise Tanh=_stax_Tanh Relu=_stax_Relu Exp=_stax_Exp LogSoftmax=_stax_LogSoftmax \
         Softmax=_stax_Softmax Softplus=_stax_Softplus Sigmoid=_stax_Sigmoid Elu=_stax_Elu LeakyRelu=_stax_LeakyRelu \
         Selu=_stax_Selu Gelu=_stax_Gelu MaxPool=_stax_MaxPool SumPool=_stax_SumPool AvgPool=_stax_AvgPool \
         Flatten=_stax_Flatten Identity=_stax_Identity FanOut=_stax_FanOut FanInSum=_stax_FanInSum \
         FanInConcat=_stax_FanInConcat Dropout=_stax_Dropout serial=_stax_serial parallel=_stax_parallel \
         shape_dependent=_stax_shape_dependent relu log_softmax logsoftmax=log_softmax softmax softplus sigmoid \
         elu leaky_relu selu gelu standardize glorot_normal glorot=glorot_normal normal=_init_normal randn=_init_normal \
         ones=_init_ones zeros=_init_zeros",
    ),
    (
        "jax.example_libraries",
        "JAX's example libraries, as jax.example_libraries: optimizers and stax.",
        "optimizers=@jax.example_libraries.optimizers stax=@jax.example_libraries.stax",
    ),
    (
        "jax",
        "JAX's API on arr: transformations, devices, sharding and the namespaces under jax.",
        "grad value_and_grad jit vmap pmap jvp vjp linearize jacfwd jacrev jacobian hessian \
         make_jaxpr custom_jvp custom_vjp checkpoint remat eval_shape ShapeDtypeStruct \
         example_libraries=@jax.example_libraries \
         pure_callback custom_gradient closure_convert named_call=_jax_named_call named_scope=_jax_named_scope ensure_compile_time_eval=_jax_ensure_compile_time_eval disable_jit=_jax_disable_jit \
         device_put device_get devices local_devices device_count local_device_count \
         process_index process_count default_device default_backend block_until_ready \
         shard_map make_mesh set_mesh typeof reshard NamedSharding P=PartitionSpec \
         make_array_from_process_local_data make_array_from_callback Array=asarray \
         tree_map tree_leaves tree_flatten tree_unflatten tree_structure \
         numpy=@jax.numpy lax=@jax.lax random=@jax.random nn=@jax.nn \
         tree_util=@jax.tree_util tree=@jax.tree sharding=@jax.sharding debug=@jax.debug \
         errors=@jax.errors experimental=@jax.experimental distributed=@jax.distributed _src=@jax._src flatten_util=@jax.flatten_util \
         __version__=_jax_version \
         dtypes=@jax.dtypes checkpoint_policies=@jax.checkpoint_policies scipy=@jax.scipy \
         ad_checkpoint=@jax.ad_checkpoint test_util=@jax.test_util config=_jax_config \
         debug_nans=_jax_debug_nans effects_barrier=_jax_effects_barrier linear_transpose \
         new_ref freeze Ref ref=@jax.ref",
    ),
    (
        "optax.tree",
        "Tree arithmetic for optimisers, as optax.tree.",
        "add=_optax_tree_add sub=_optax_tree_sub mul=_optax_tree_mul div=_optax_tree_div \
         scale=_optax_tree_scale add_scale=_optax_tree_add_scale vdot=_optax_tree_vdot \
         sum=_optax_tree_sum max=_optax_tree_max min=_optax_tree_min \
         size=_optax_tree_size norm=_optax_tree_norm zeros_like=_optax_tree_zeros_like \
         ones_like=_optax_tree_ones_like full_like=_optax_tree_full_like \
         clip=_optax_tree_clip cast=_optax_tree_cast cast_like=_optax_tree_cast_like \
         where=_optax_tree_where update_moment=_optax_tree_update_moment \
         update_moment_per_elem_norm=_optax_tree_update_moment_per_elem_norm \
         update_infinity_moment=_optax_tree_update_infinity_moment \
         bias_correction=_optax_tree_bias_correction",
    ),
    (
        "optax.tree_utils",
        "Tree arithmetic for optimisers, as optax.tree_utils (optax.tree's older names).",
        "tree_add=_optax_tree_add tree_sub=_optax_tree_sub tree_mul=_optax_tree_mul \
         tree_div=_optax_tree_div tree_scale=_optax_tree_scale \
         tree_add_scale=_optax_tree_add_scale tree_vdot=_optax_tree_vdot \
         tree_sum=_optax_tree_sum tree_max=_optax_tree_max tree_min=_optax_tree_min \
         tree_size=_optax_tree_size tree_norm=_optax_tree_norm \
         tree_zeros_like=_optax_tree_zeros_like tree_ones_like=_optax_tree_ones_like \
         tree_full_like=_optax_tree_full_like tree_clip=_optax_tree_clip \
         tree_cast=_optax_tree_cast tree_cast_like=_optax_tree_cast_like \
         tree_where=_optax_tree_where tree_update_moment=_optax_tree_update_moment \
         tree_update_moment_per_elem_norm=_optax_tree_update_moment_per_elem_norm \
         tree_update_infinity_moment=_optax_tree_update_infinity_moment \
         tree_bias_correction=_optax_tree_bias_correction \
         tree_l1_norm=_optax_tree_l1_norm tree_l2_norm=_optax_tree_l2_norm \
         tree_linf_norm=_optax_tree_linf_norm tree_get=_optax_tree_get tree_set=_optax_tree_set \
         tree_get_all_with_path=_optax_tree_get_all_with_path NamedTupleKey=_optax_NamedTupleKey",
    ),
    (
        "optax.schedules",
        "Learning-rate schedules (functions of the step count), as optax.schedules.",
        "constant_schedule=_optax_constant_schedule \
         polynomial_schedule=_optax_polynomial_schedule \
         linear_schedule=_optax_linear_schedule \
         piecewise_constant_schedule=_optax_piecewise_constant_schedule \
         exponential_decay=_optax_exponential_decay \
         cosine_decay_schedule=_optax_cosine_decay_schedule \
         join_schedules=_optax_join_schedules \
         warmup_constant_schedule=_optax_warmup_constant_schedule \
         warmup_cosine_decay_schedule=_optax_warmup_cosine_decay_schedule \
         warmup_exponential_decay_schedule=_optax_warmup_exponential_decay_schedule \
         sgdr_schedule=_optax_sgdr_schedule \
         cosine_onecycle_schedule=_optax_cosine_onecycle_schedule \
         linear_onecycle_schedule=_optax_linear_onecycle_schedule \
         piecewise_interpolate_schedule=_optax_piecewise_interpolate_schedule \
         inject_hyperparams=_optax_inject_hyperparams \
         InjectHyperparamsState=_optax_InjectHyperparamsState \
         InjectStatefulHyperparamsState=_optax_InjectStatefulHyperparamsState \
         WrappedScheduleState=_optax_WrappedScheduleState Schedule=_typing_Callable",
    ),
    (
        "optax.losses",
        "Loss functions, as optax.losses.",
        "l2_loss=_optax_l2_loss squared_error=_optax_squared_error \
         huber_loss=_optax_huber_loss log_cosh=_optax_log_cosh \
         cosine_similarity=_optax_cosine_similarity \
         cosine_distance=_optax_cosine_distance \
         softmax_cross_entropy=_optax_softmax_cross_entropy \
         softmax_cross_entropy_with_integer_labels=_optax_softmax_cross_entropy_with_integer_labels \
         safe_softmax_cross_entropy=_optax_safe_softmax_cross_entropy \
         sigmoid_binary_cross_entropy=_optax_sigmoid_binary_cross_entropy \
         kl_divergence=_optax_kl_divergence \
         kl_divergence_with_log_targets=_optax_kl_divergence_with_log_targets \
         convex_kl_divergence=_optax_convex_kl_divergence \
         generalized_kl_divergence=_optax_generalized_kl_divergence \
         hinge_loss=_optax_hinge_loss perceptron_loss=_optax_perceptron_loss \
         sigmoid_focal_loss=_optax_sigmoid_focal_loss smooth_labels=_optax_smooth_labels \
         poly_loss_cross_entropy=_optax_poly_loss_cross_entropy",
    ),
    (
        "flax.nnx.initializers",
        "Parameter initialisers, as flax.nnx.initializers (jax.nn.initializers and zeros_init, ones_init).",
        "zeros=_init_zeros ones=_init_ones constant=_init_constant normal=_init_normal \
         uniform=_init_uniform truncated_normal=_init_truncated_normal \
         variance_scaling=_init_variance_scaling lecun_normal lecun_uniform \
         glorot_normal glorot_uniform xavier_normal=glorot_normal xavier_uniform=glorot_uniform \
         he_normal he_uniform kaiming_normal=he_normal kaiming_uniform=he_uniform \
         orthogonal=_init_orthogonal delta_orthogonal=_init_delta_orthogonal \
         zeros_init=_nnx_zeros_init ones_init=_nnx_ones_init",
    ),
    (
        "flax.nnx.metrics",
        "Metrics accumulated over steps, as flax.nnx.metrics.",
        "Metric=_nnx_Metric Average=_nnx_Average Accuracy=_nnx_Accuracy MultiMetric=_nnx_MultiMetric \
         Welford=_nnx_Welford Statistics=_nnx_Statistics",
    ),
    (
        "flax.nnx.filterlib",
        "Filters of variables by type, tag and path, as flax.nnx.filterlib.",
        "to_predicate=_nnx_to_predicate OfType=_nnx_OfType WithTag=_nnx_WithTag \
         PathContains=_nnx_PathContains PathIn=_nnx_PathIn Any=_nnx_Any All=_nnx_All \
         Not=_nnx_Not Everything=_nnx_Everything Nothing=_nnx_Nothing",
    ),
    (
        "flax.nnx.nn.linear",
        "The linear layers' module, as flax.nnx.nn.linear.",
        "Linear=_nnx_Linear LinearGeneral=_nnx_LinearGeneral Einsum=_nnx_Einsum Embed=_nnx_Embed \
         default_kernel_init=_nnx_default_kernel_init",
    ),
    (
        "flax.nnx.nn",
        "The layers' modules, as flax.nnx.nn.",
        "linear=@flax.nnx.nn.linear initializers=@flax.nnx.initializers",
    ),
    (
        "flax.nnx.graph",
        "The object graph of modules and variables, as flax.nnx.graph.",
        "Key=_nnx_graph_Key flatten=_nnx_graph_flatten unflatten=_nnx_merge split=_nnx_split \
         merge=_nnx_merge state=_nnx_state update=_nnx_update graphdef=_nnx_graphdef \
         iter_graph=_nnx_iter_graph_public clone=_nnx_clone",
    ),
    (
        "flax.nnx",
        "Neural-network modules, as Flax NNX: modules, variables, random streams, layers, transforms, optimiser.",
        "VariableMetadata=_nnx_VariableMetadata with_metadata=_nnx_with_metadata with_partitioning=_nnx_with_partitioning \
         use_eager_sharding=_nnx_use_eager_sharding using_eager_sharding=_nnx_using_eager_sharding \
         logical_axis_rules=_nnx_logical_axis_rules set_logical_axis_rules=_nnx_set_logical_axis_rules \
         get_logical_axis_rules=_nnx_get_logical_axis_rules get_partition_spec=_nnx_get_partition_spec \
         get_named_sharding=_nnx_get_named_sharding to_pure_dict=_nnx_to_pure_dict replace_by_pure_dict=_nnx_replace_by_pure_dict \
         restore_int_paths=_nnx_restore_int_paths eval_shape=_nnx_eval_shape vmap=_nnx_vmap scan=_nnx_scan Carry=_nnx_Carry split_rngs=_nnx_split_rngs restore_rngs=_nnx_restore_rngs \
         Conv=_nnx_Conv ConvTranspose=_nnx_ConvTranspose InstanceNorm=_nnx_InstanceNorm LSTMCell=_nnx_LSTMCell \
         GRUCell=_nnx_GRUCell SimpleCell=_nnx_SimpleCell RNN=_nnx_RNN RNNCellBase=_nnx_RNNCellBase avg_pool=_nnx_avg_pool max_pool=_nnx_max_pool min_pool=_nnx_min_pool pool=_nnx_pool Accuracy=_nnx_Accuracy All=_nnx_All Any=_nnx_Any Average=_nnx_Average \
         BatchNorm=_nnx_BatchNorm BatchStat=_nnx_BatchStat Cache=_nnx_Cache Dict=_nnx_Dict \
         DiffState=_nnx_DiffState Dropout=_nnx_Dropout Einsum=_nnx_Einsum Embed=_nnx_Embed \
         Everything=_nnx_Everything GraphDef=_nnx_GraphDef GraphState=_nnx_GraphState \
         Intermediate=_nnx_Intermediate GroupNorm=_nnx_GroupNorm LayerNorm=_nnx_LayerNorm Linear=_nnx_Linear \
         LinearGeneral=_nnx_LinearGeneral List=_nnx_List Metric=_nnx_Metric \
         MetricState=_nnx_MetricState ModelAndOptimizer=_nnx_ModelAndOptimizer Module=_nnx_Module \
         MultiHeadAttention=_nnx_MultiHeadAttention MultiMetric=_nnx_MultiMetric Not=_nnx_Not \
         Nothing=_nnx_Nothing Object=_nnx_Object OfType=_nnx_OfType OptArray=_nnx_OptArray \
         OptState=_nnx_OptState OptVariable=_nnx_OptVariable Optimizer=_nnx_Optimizer \
         Param=_nnx_Param PathContains=_nnx_PathContains Perturbation=_nnx_Perturbation \
         Pytree=_nnx_Pytree RMSNorm=_nnx_RMSNorm RngCount=_nnx_RngCount RngKey=_nnx_RngKey \
         RngState=_nnx_RngState RngStream=_nnx_RngStream Rngs=_nnx_Rngs Sequential=_nnx_Sequential \
         State=_nnx_State Variable=_nnx_Variable as_pure=_nnx_to_pure_dict checkpoint=_nnx_checkpoint \
         clone=_nnx_clone combine_masks=_nnx_combine_masks data=_nnx_data display=_nnx_display \
         dot_product_attention=_nnx_dot_product_attention \
         dot_product_attention_weights=_nnx_dot_product_attention_weights grad=_nnx_grad \
         graphdef=_nnx_graphdef jit=_nnx_jit make_attention_mask=_nnx_make_attention_mask \
         make_causal_mask=_nnx_make_causal_mask merge=_nnx_merge remat=_nnx_remat split=_nnx_split \
         state=_nnx_state static=_nnx_static update=_nnx_update value_and_grad=_nnx_value_and_grad \
         variables=_nnx_variables pure=_nnx_to_pure_dict iter_graph=_nnx_iter_graph_public \
         to_flat_state=_nnx_to_flat_state from_flat_state=_nnx_from_flat_state relu relu6 sigmoid \
         log_sigmoid softplus soft_sign silu swish gelu elu celu selu leaky_relu hard_tanh \
         hard_sigmoid hard_silu hard_swish glu tanh logsumexp softmax log_softmax one_hot \
         standardize initializers=@flax.nnx.initializers metrics=@flax.nnx.metrics \
         view=_nnx_view view_info=_nnx_view_info with_attributes=_nnx_with_attributes \
         recursive_map=_nnx_recursive_map iter_modules=_nnx_iter_modules \
         iter_children=_nnx_iter_children cond=_nnx_cond switch=_nnx_switch \
         fori_loop=_nnx_fori_loop while_loop=_nnx_while_loop filterlib=@flax.nnx.filterlib \
         WithTag=_nnx_WithTag PathIn=_nnx_PathIn is_data=_nnx_is_data dataclass=_nnx_dataclass \
         find_duplicates=_nnx_find_duplicates StateAxes=_nnx_StateAxes reseed=_nnx_reseed pop=_nnx_pop \
         capture=_nnx_capture merge_state=_nnx_merge_state cached_partial=_nnx_cached_partial \
         get_abstract_model=_nnx_get_abstract_model as_abstract=_nnx_as_abstract \
         graph=@flax.nnx.graph PARTITION_NAME=_nnx_PARTITION_NAME \
         nn=@flax.nnx.nn",
    ),
    (
        "flax.training.train_state",
        "A training state pytree, as flax.training.train_state.",
        "TrainState=_ts_TrainState",
    ),
    (
        "flax.training",
        "Training utilities, as flax.training.",
        "train_state=@flax.training.train_state",
    ),
    (
        "flax.traverse_util",
        "Nested dicts by path, as flax.traverse_util.",
        "flatten_dict=_traverse_util_flatten_dict unflatten_dict=_traverse_util_unflatten_dict \
         path_aware_map=_traverse_util_path_aware_map empty_node=_traverse_util_empty_node",
    ),
    (
        "flax",
        "Flax, as flax: its NNX API, flax.training and flax.traverse_util.",
        "nnx=@flax.nnx training=@flax.training traverse_util=@flax.traverse_util \
         struct=@flax.struct",
    ),
    (
        "flax.struct",
        "Frozen dataclasses that are pytrees, as flax.struct.",
        "dataclass=_struct_dataclass field=_struct_field PyTreeNode=_struct_PyTreeNode",
    ),
    (
        "optax",
        "Gradient processing and optimisation, as optax: transformations, optimisers, schedules, losses.",
        "GradientTransformation=_optax_GradientTransformation flatten=_optax_flatten \
         GradientTransformationExtraArgs=_optax_GradientTransformationExtraArgs \
         EmptyState=_optax_EmptyState TraceState=_optax_TraceState \
         EmaState=_optax_EmaState ScaleByAdamState=_optax_ScaleByAdamState \
         ScaleByAmsgradState=_optax_ScaleByAmsgradState \
         ScaleByBeliefState=_optax_ScaleByBeliefState \
         ScaleByLionState=_optax_ScaleByLionState ScaleByRmsState=_optax_ScaleByRmsState \
         ScaleByRmsWithCountState=_optax_ScaleByRmsWithCountState \
         ScaleByRStdDevState=_optax_ScaleByRStdDevState \
         ScaleByRStdDevWithCountState=_optax_ScaleByRStdDevWithCountState \
         ScaleByRssState=_optax_ScaleByRssState \
         ScaleByScheduleState=_optax_ScaleByScheduleState \
         FactoredState=_optax_FactoredState MaskedState=_optax_MaskedState \
         MaskedNode=_optax_MaskedNode MultiStepsState=_optax_MultiStepsState \
         MultiSteps=_optax_MultiSteps \
         InjectHyperparamsState=_optax_InjectHyperparamsState \
         InjectStatefulHyperparamsState=_optax_InjectStatefulHyperparamsState \
         apply_updates=_optax_apply_updates incremental_update=_optax_incremental_update \
         periodic_update=_optax_periodic_update chain=_optax_chain \
         named_chain=_optax_named_chain identity=_optax_identity \
         set_to_zero=_optax_set_to_zero stateless=_optax_stateless \
         with_extra_args_support=_optax_with_extra_args_support \
         init_empty_state=_optax_init_empty_state scale=_optax_scale \
         scale_by_learning_rate=_optax_scale_by_learning_rate \
         scale_by_schedule=_optax_scale_by_schedule scale_by_adam=_optax_scale_by_adam \
         scale_by_amsgrad=_optax_scale_by_amsgrad scale_by_adamax=_optax_scale_by_adamax \
         scale_by_belief=_optax_scale_by_belief scale_by_lion=_optax_scale_by_lion \
         scale_by_rms=_optax_scale_by_rms scale_by_stddev=_optax_scale_by_stddev \
         scale_by_rss=_optax_scale_by_rss \
         scale_by_trust_ratio=_optax_scale_by_trust_ratio \
         scale_by_param_block_rms=_optax_scale_by_param_block_rms \
         scale_by_factored_rms=_optax_scale_by_factored_rms trace=_optax_trace \
         ema=_optax_ema add_decayed_weights=_optax_add_decayed_weights clip=_optax_clip \
         clip_by_block_rms=_optax_clip_by_block_rms \
         clip_by_global_norm=_optax_clip_by_global_norm global_norm=_optax_global_norm \
         masked=_optax_masked inject_hyperparams=_optax_inject_hyperparams \
         skip_not_finite=_optax_skip_not_finite \
         skip_large_updates=_optax_skip_large_updates safe_norm=_optax_safe_norm \
         safe_root_mean_squares=_optax_safe_root_mean_squares \
         safe_increment=_optax_safe_increment \
         safe_int32_increment=_optax_safe_int32_increment sgd=_optax_sgd \
         adam=_optax_adam nadam=_optax_nadam adamw=_optax_adamw nadamw=_optax_nadamw \
         amsgrad=_optax_amsgrad adamax=_optax_adamax lamb=_optax_lamb lion=_optax_lion \
         adabelief=_optax_adabelief adagrad=_optax_adagrad rmsprop=_optax_rmsprop \
         adafactor=_optax_adafactor ScaleState=_optax_EmptyState \
         AddDecayedWeightsState=_optax_EmptyState ClipState=_optax_EmptyState \
         ClipByGlobalNormState=_optax_EmptyState \
         ScaleByTrustRatioState=_optax_EmptyState \
         constant_schedule=_optax_constant_schedule \
         polynomial_schedule=_optax_polynomial_schedule \
         linear_schedule=_optax_linear_schedule \
         piecewise_constant_schedule=_optax_piecewise_constant_schedule \
         exponential_decay=_optax_exponential_decay \
         cosine_decay_schedule=_optax_cosine_decay_schedule \
         join_schedules=_optax_join_schedules \
         warmup_constant_schedule=_optax_warmup_constant_schedule \
         warmup_cosine_decay_schedule=_optax_warmup_cosine_decay_schedule \
         warmup_exponential_decay_schedule=_optax_warmup_exponential_decay_schedule \
         l2_loss=_optax_l2_loss squared_error=_optax_squared_error \
         huber_loss=_optax_huber_loss log_cosh=_optax_log_cosh \
         cosine_similarity=_optax_cosine_similarity \
         cosine_distance=_optax_cosine_distance \
         softmax_cross_entropy=_optax_softmax_cross_entropy \
         softmax_cross_entropy_with_integer_labels=_optax_softmax_cross_entropy_with_integer_labels \
         safe_softmax_cross_entropy=_optax_safe_softmax_cross_entropy \
         sigmoid_binary_cross_entropy=_optax_sigmoid_binary_cross_entropy \
         kl_divergence=_optax_kl_divergence convex_kl_divergence=_optax_convex_kl_divergence \
         generalized_kl_divergence=_optax_generalized_kl_divergence \
         hinge_loss=_optax_hinge_loss sigmoid_focal_loss=_optax_sigmoid_focal_loss \
         smooth_labels=_optax_smooth_labels \
         sgdr_schedule=_optax_sgdr_schedule \
         cosine_onecycle_schedule=_optax_cosine_onecycle_schedule \
         linear_onecycle_schedule=_optax_linear_onecycle_schedule \
         piecewise_interpolate_schedule=_optax_piecewise_interpolate_schedule \
         radam=_optax_radam yogi=_optax_yogi adadelta=_optax_adadelta novograd=_optax_novograd \
         sm3=_optax_sm3 fromage=_optax_fromage lars=_optax_lars adan=_optax_adan \
         scale_by_radam=_optax_scale_by_radam scale_by_yogi=_optax_scale_by_yogi \
         scale_by_adadelta=_optax_scale_by_adadelta scale_by_novograd=_optax_scale_by_novograd \
         scale_by_adan=_optax_scale_by_adan scale_by_sm3=_optax_scale_by_sm3 \
         ScaleByAdaDeltaState=_optax_ScaleByAdaDeltaState ScaleByAdanState=_optax_ScaleByAdanState \
         ScaleByNovogradState=_optax_ScaleByNovogradState ScaleBySM3State=_optax_ScaleBySM3State \
         multi_transform=_optax_partition MultiTransformState=_optax_PartitionState \
         partition=_optax_partition PartitionState=_optax_PartitionState \
         apply_if_finite=_optax_apply_if_finite ApplyIfFiniteState=_optax_ApplyIfFiniteState \
         zero_nans=_optax_zero_nans ZeroNansState=_optax_ZeroNansState \
         lookahead=_optax_lookahead LookaheadState=_optax_LookaheadState \
         LookaheadParams=_optax_LookaheadParams \
         Params=_typing_Any OptState=_typing_Any Updates=_typing_Any \
         Schedule=_typing_Callable ScalarOrSchedule=_typing_Any \
         TransformInitFn=_typing_Callable TransformUpdateFn=_typing_Callable \
         tree=@optax.tree tree_utils=@optax.tree_utils schedules=@optax.schedules \
         losses=@optax.losses",
    ),
    (
        "numpy.random",
        "NumPy's random numbers (its own generators and streams), as numpy.random.",
        "*_np_random shuffle=np_shuffle default_rng=np_default_rng RandomState=np_RandomState",
    ),
    (
        "numpy.testing",
        "Assertions on arrays, as numpy.testing.",
        "assert_allclose assert_array_equal assert_equal assert_array_almost_equal \
         assert_almost_equal assert_array_less",
    ),
    (
        "numpy.linalg",
        "Linear algebra, as numpy.linalg.",
        "norm inv solve det=_np_det slogdet cholesky eigh eigvalsh svd qr pinv matrix_rank matrix_power \
         lstsq eig eigvals multi_dot",
    ),
    (
        "numpy.fft",
        "Discrete Fourier transforms, as numpy.fft.",
        "fft ifft rfft irfft fft2 ifft2 rfft2 irfft2 fftn ifftn rfftn irfftn fftfreq rfftfreq fftshift ifftshift",
    ),
    (
        "numpy",
        "NumPy's API, as numpy (the functions of jax.numpy).",
        NUMPY_ONLY,
    ),
    (
        "abc",
        "Abstract base classes, as abc (abstract methods are not enforced).",
        "ABC=_abc_ABC ABCMeta=type abstractmethod=_abc_abstractmethod",
    ),
    (
        "functools",
        "Higher-order functions, as functools.",
        "partial reduce=functools_reduce wraps lru_cache cache cached_property",
    ),
    (
        "math",
        "Python's math functions on Python numbers, as math.",
        "pi e inf nan tau=_math_tau sqrt=math_sqrt exp=math_exp log=math_log log2=math_log2 \
         log10=math_log10 log1p=math_log1p sin=math_sin cos=math_cos tan=math_tan \
         tanh=math_tanh atan=math_atan atan2=math_atan2 floor=math_floor ceil=math_ceil \
         isclose=math_isclose isfinite=math_isfinite isnan=math_isnan isinf=math_isinf \
         prod=math_prod fsum=math_fsum gcd lcm factorial comb perm hypot degrees radians \
         copysign fabs trunc=math_trunc erf=math_erf gamma lgamma=math_lgamma",
    ),
    ("time", "Clocks, as time.", "perf_counter time=time_time sleep monotonic=perf_counter"),
    (
        "operator",
        "Operators as functions, as operator.",
        "add=operator_add sub=operator_sub mul=operator_mul truediv=operator_truediv \
         matmul=operator_matmul neg=operator_neg getitem=operator_getitem itemgetter attrgetter=_operator_attrgetter \
         is_=_operator_is is_not=_operator_is_not",
    ),
    ("copy", "Copies of containers and objects, as copy.", "copy=_copy_copy deepcopy=_copy_deepcopy"),
    (
        "dataclasses",
        "Classes of fields, as dataclasses.",
        "dataclass field replace fields asdict astuple is_dataclass \
         FrozenInstanceError=AttributeError",
    ),
    (
        "typing",
        "Type hints (kept, not enforced), as typing.",
        "NamedTuple Any=_typing_Any Callable=_typing_Callable Optional=_typing_Optional \
         Union=_typing_Union Sequence=_typing_Sequence Tuple=_typing_Tuple List=_typing_List \
         Dict=_typing_Dict Iterable=_typing_Iterable Iterator=_typing_Iterator \
         Mapping=_typing_Mapping",
    ),
    (
        "collections",
        "Containers, as collections.",
        "namedtuple OrderedDict=dict defaultdict Counter deque",
    ),
    (
        "itertools",
        "Iterators, as itertools (endless ones and islice as generators, finite ones as lists).",
        "product=_itertools_product permutations=_itertools_permutations \
         combinations=_itertools_combinations chain=_itertools_chain count=_itertools_count cycle=_itertools_cycle \
         accumulate=_itertools_accumulate islice=_itertools_islice zip_longest=_itertools_zip_longest \
         repeat=_itertools_repeat starmap=_itertools_starmap takewhile=_itertools_takewhile \
         dropwhile=_itertools_dropwhile combinations_with_replacement=_itertools_combinations_with_replacement \
         pairwise=_itertools_pairwise batched=_itertools_batched compress=_itertools_compress \
         filterfalse=_itertools_filterfalse groupby=_itertools_groupby tee=_itertools_tee",
    ),
    ("contextlib", "Context managers, as contextlib.", "nullcontext suppress contextmanager"),
    (
        "re",
        "Regular expressions, as re (no look-around or backreferences: they run in linear time).",
        "compile=_re_compile search=_re_search match=_re_match fullmatch=_re_fullmatch \
         findall=_re_findall finditer=_re_finditer sub=_re_sub subn=_re_subn split=_re_split \
         escape=_re_escape I=_re_I IGNORECASE=_re_IGNORECASE M=_re_M MULTILINE=_re_MULTILINE \
         S=_re_S DOTALL=_re_DOTALL X=_re_X VERBOSE=_re_VERBOSE error=ValueError",
    ),
    (
        "matplotlib.pyplot",
        "matplotlib's pyplot over arr's figures (styling arguments are accepted, not drawn).",
        "plot=_plt_plot scatter=_plt_scatter hist=_plt_hist imshow=_plt_imshow \
         title=_plt_title xlabel=_plt_xlabel ylabel=_plt_ylabel legend=_plt_legend \
         show=_plt_show savefig=_plt_savefig figure=_plt_figure subplots=_plt_subplots \
         subplot=_plt_subplot tight_layout=_plt_ignored grid=_plt_ignored xlim=_plt_ignored \
         ylim=_plt_ignored colorbar=_plt_ignored close=_plt_ignored axis=_plt_ignored \
         text=_plt_ignored xticks=_plt_ignored yticks=_plt_ignored suptitle=_plt_ignored",
    ),
    (
        "matplotlib",
        "Plots, as matplotlib (its pyplot).",
        "pyplot=@matplotlib.pyplot use=_plt_ignored",
    ),
    (
        "enum",
        "Enumerations, as enum.",
        "Enum=_enum_Enum IntEnum=_enum_IntEnum StrEnum=_enum_StrEnum auto=_enum_auto \
         unique=_enum_unique EnumType=_enum_EnumType EnumMeta=_enum_EnumType",
    ),
    ("sys", "The interpreter, as sys.", "argv stdout=_sys_stdout stderr=_sys_stderr"),
    (
        "inspect",
        "Signatures of functions and type predicates, as inspect.",
        "signature=_inspect_signature Signature=_inspect_Signature Parameter=_inspect_Parameter \
         getdoc=_inspect_getdoc cleandoc=_inspect_cleandoc isclass=_inspect_isclass isfunction=_inspect_isfunction ismethod=_inspect_ismethod",
    ),
    (
        "textwrap",
        "Wrapping and indenting text, as textwrap.",
        "wrap=_textwrap_wrap fill=_textwrap_fill dedent=_textwrap_dedent indent=_textwrap_indent",
    ),
    (
        "traceback",
        "Tracebacks of exceptions, as traceback.",
        "format_exc=_traceback_format_exc print_exc=_traceback_print_exc",
    ),
    (
        "logging",
        "Logging to standard error, as logging.",
        "getLogger=_logging_getLogger basicConfig=_logging_basicConfig debug=_logging_debug \
         info=_logging_info warning=_logging_warning error=_logging_error \
         critical=_logging_critical Logger=_logging_Logger",
    ),
    (
        "__future__",
        "Python's future statements, as __future__ (every feature is already on).",
        "annotations=_typing_Any division=_typing_Any print_function=_typing_Any",
    ),
    (
        "os.path",
        "Paths, as os.path.",
        "join=_os_path_join exists=_os_path_exists isdir=_os_path_isdir isfile=_os_path_isfile \
         basename=_os_path_basename dirname=_os_path_dirname splitext=_os_path_splitext \
         abspath=_os_path_abspath expanduser=_os_path_expanduser",
    ),
    (
        "os",
        "The operating system, as os: the environment (as the program started), files and folders.",
        "environ=_os_environ sep=_os_sep getcwd=_os_getcwd getenv=_os_getenv cpu_count=_os_cpu_count \
         getpid=_os_getpid listdir=_os_listdir makedirs=_os_makedirs mkdir=_os_mkdir remove=_os_remove \
         truncate=_os_truncate \
         path=@os.path",
    ),
    ("shutil", "Files and folders, as shutil.", "rmtree=_shutil_rmtree"),
    ("tempfile", "Temporary folders, as tempfile.", "mkdtemp=_tempfile_mkdtemp gettempdir=_tempfile_gettempdir"),
    (
        "warnings",
        "Warnings, as warnings: printed on stderr.",
        "warn=_warnings_warn filterwarnings=_warnings_filterwarnings simplefilter=_warnings_simplefilter \
         catch_warnings=nullcontext",
    ),
    ("pprint", "Printing values, as pprint.", "pprint=print pp=print"),
    ("pathlib", "Paths as objects, as pathlib.", "Path=_pathlib_Path PurePath=_pathlib_Path PosixPath=_pathlib_Path"),
    (
        "orbax.checkpoint.test_utils",
        "Helpers of orbax's tests, as orbax.checkpoint.test_utils.",
        "erase_and_create_empty=_orbax_erase_and_create_empty",
    ),
    (
        "orbax.checkpoint.args",
        "What to save and restore, as orbax.checkpoint.args.",
        "StandardSave=_orbax_StandardSave StandardRestore=_orbax_StandardRestore \
         PyTreeSave=_orbax_StandardSave PyTreeRestore=_orbax_StandardRestore",
    ),
    (
        "orbax.checkpoint",
        "Checkpoints of pytrees of (sharded) arrays, as orbax.checkpoint: each device's blocks \
         written once, restored onto any mesh.",
        "StandardCheckpointer=_orbax_StandardCheckpointer PyTreeCheckpointer=_orbax_StandardCheckpointer \
         Checkpointer=_orbax_StandardCheckpointer test_utils=@orbax.checkpoint.test_utils \
         args=@orbax.checkpoint.args",
    ),
    ("orbax", "Orbax, as orbax: its checkpoint module.", "checkpoint=@orbax.checkpoint"),
];

/// The functions of NumPy's API that jax.numpy shares, beyond what the
/// `numpy` row adds.
const NUMPY: &str = "\
    array asarray zeros ones full empty zeros_like ones_like full_like empty_like eye identity \
    arange linspace logspace geomspace meshgrid indices tri tril triu diag diagonal diagflat \
    copy astype=_jnp_astype reshape ravel transpose swapaxes moveaxis expand_dims squeeze \
    broadcast_to broadcast_arrays broadcast_shapes atleast_1d atleast_2d atleast_3d \
    concatenate concat=concatenate stack hstack vstack dstack column_stack split array_split hsplit vsplit \
    tile repeat flip fliplr flipud roll rot90 pad insert delete append resize trim_zeros \
    take take_along_axis put_along_axis diag_indices tril_indices triu_indices where select piecewise vectorize choose compress extract nonzero \
    argwhere flatnonzero unique searchsorted digitize sort argsort lexsort partition argpartition \
    sum prod mean median average var std min max amin=min amax=max ptp argmin argmax all any \
    cumsum cumprod cumulative_sum nancumsum nansum nanmean nanmax nanmin nanstd nanvar \
    nanargmax nanargmin percentile quantile nanpercentile nanquantile count_nonzero \
    histogram histogram_bin_edges bincount interp diff ediff1d gradient trapezoid convolve \
    correlate polyval polyfit polyder roots vander cov corrcoef \
    isin setdiff1d intersect1d union1d setxor1d unravel_index ravel_multi_index \
    modf frexp ldexp unwrap fromfunction block bitwise_count unpackbits packbits \
    dot vdot inner outer matmul tensordot einsum kron cross trace isscalar \
    abs absolute=abs fabs sign negative positive add subtract multiply divide true_divide \
    floor_divide mod remainder fmod divmod power float_power square sqrt cbrt reciprocal \
    exp exp2 expm1 log log2 log10 log1p logaddexp logaddexp2 sin cos tan arcsin arccos \
    arctan arctan2 sinh cosh tanh arcsinh arccosh arctanh deg2rad rad2deg degrees=rad2deg radians=deg2rad \
    hypot floor ceil trunc rint round around=round fix clip maximum minimum fmax fmin \
    isnan isinf isfinite isposinf isneginf nan_to_num signbit copysign nextafter heaviside \
    sinc i0 hamming hanning blackman bartlett kaiser real imag conj conjugate angle \
    equal not_equal less less_equal greater greater_equal isclose allclose array_equal \
    array_equiv logical_and logical_or logical_not logical_xor bitwise_and bitwise_or \
    bitwise_xor bitwise_not=invert invert left_shift right_shift gcd lcm \
    shape ndim size result_type promote_types can_cast issubdtype iinfo finfo dtype \
    float16 float32 float64 bfloat16 int8 int16 int32 int64 uint8 uint16 uint32 uint64 \
    bool_ complex64 complex128 int_=int64 float_=float64 uint floating integer number inexact \
    signedinteger unsignedinteger complexfloating generic \
    pi e inf nan newaxis euler_gamma \
    save load savez linalg=@jax.numpy.linalg fft=@jax.numpy.fft ndarray=asarray \
    set_printoptions get_printoptions printoptions=_np_printoptions";

/// numpy: the same functions, its own submodules.
const NUMPY_ONLY: &str = "\
    *jax.numpy random=@numpy.random testing=@numpy.testing linalg=@numpy.linalg \
    fft=@numpy.fft ndarray=_np_asarray asarray=_np_asarray array=_np_array linspace=_np_linspace histogram=_np_histogram \
    errstate=_np_errstate seterr=_np_seterr geterr=_np_geterr";

/// Build the namespaces of the table that `wanted` picks and make them
/// importable. Members whose builtin is missing are left out (see
/// `missing_members`).
pub(crate) fn register(interp: &mut Interp, wanted: &dyn Fn(&str) -> bool) {
    for &(name, doc, spec) in MODULES.iter().filter(|r| wanted(r.0)) {
        let numpy = name == "numpy" || name.starts_with("numpy.");
        let members = members(interp, spec)
            .into_iter()
            .filter_map(|(n, v)| match (v?, numpy) {
                (v, true) => {
                    let v = numpy_view(&n, v);
                    Some((n, v))
                }
                (v, _) if name == "jax.numpy" || name == "jax.random" => {
                    let v = jax_numpy_view(name, &n, v);
                    Some((n, v))
                }
                (v, _) => Some((n, v)),
            })
            .collect();
        interp.add_module(Interp::make_module(name, doc, members));
    }
}

/// numpy's view of a member: its function behind NumPy's rules (a builtin
/// as `returning_ndarrays`; a function written in arr the same way, called
/// through the interpreter); constants, dtypes and classes as they are.
fn numpy_view(member: &str, v: Value) -> Value {
    let (signature, doc) = match &v {
        Value::Builtin(b) => return returning_ndarrays(b),
        Value::Function(f) => (
            f.code.signature.clone(),
            f.code.doc.clone().unwrap_or_default(),
        ),
        Value::Native(_) => (format!("{member}(*args, **kwargs)"), String::new()),
        _ => return v,
    };
    let (params, defaults) = any_args();
    let inner = v.clone();
    let call = move |i: &mut Interp, a: Vec<Value>| {
        let (args, kwargs) = split_any_args(a);
        i.call(&inner, args, kwargs)
    };
    returning_ndarrays(&Builtin {
        name: Rc::from(member),
        signature,
        doc,
        params,
        defaults,
        func: Rc::new(call),
        effect: Default::default(),
    })
}

/// numpy's view of a builtin: the same function, with NumPy's 64-bit
/// default dtypes (`numpy::numpy_defaults`), whose arrays come back as
/// NumPy arrays (`np.sum(x)` of a JAX array is an ndarray, as in NumPy).
/// The one exception to "a namespace holds the globals' values".
fn returning_ndarrays(b: &Builtin) -> Value {
    let inner = b.func.clone();
    Value::Builtin(Rc::new(Builtin {
        name: b.name.clone(),
        signature: b.signature.clone(),
        doc: b.doc.clone(),
        params: b.params.clone(),
        defaults: b.defaults.clone(),
        // NumPy never traces: on values a trace does not own (`np.prod(x.shape)`
        // inside jit) it computes at once, as NumPy would.
        func: Rc::new(move |i, a| {
            let _eager = arr_runtime::transform::eager_constants();
            let _defaults = numpy::numpy_defaults(true);
            Ok(numpy::with_flavour(inner(i, a)?, numpy::NDARRAY))
        }),
        effect: b.effect,
    }))
}

/// jax.numpy's functions that refuse a Python list or tuple where they take
/// an array (JAX's `check_arraylike`; arr's own functions, and NumPy's, take
/// lists), with the positional arguments they check: `name` the first,
/// `name:1` the first two, `name:*` all. Measured against JAX 0.10.2 by
/// calling each member with a list at position 0, then at position 1.
const ARRAYLIKE: &str = "\
    abs absolute all amax amin angle any append arccos arccosh arcsin arcsinh arctan arctanh \
    argmax argmin argpartition argsort argwhere around array_split astype bincount bitwise_count \
    bitwise_not broadcast_to cbrt ceil clip conj conjugate copy cos cosh count_nonzero cumprod \
    cumsum cumulative_sum deg2rad degrees diag diagflat diagonal diff ediff1d empty_like exp exp2 \
    expand_dims expm1 fabs flatnonzero flip fliplr flipud floor frexp hsplit i0 imag invert \
    isfinite isinf isnan isneginf isposinf log log10 log1p log2 logical_not max mean median \
    min modf nan_to_num nanargmax nanargmin nancumsum nanmax nanmean nanmin nanstd nansum nanvar \
    nonzero ones_like pad partition polyder positive prod ptp rad2deg radians ravel real \
    reciprocal reshape resize rint roll roots rot90 round sign signbit sin sinc sinh sort split \
    sqrt square squeeze std sum tan tanh tile trace transpose tril trim_zeros triu trunc unique \
    unravel_index unwrap vander var vsplit zeros_like negative \
    add:1 allclose:1 arctan2:1 bitwise_and:1 bitwise_or:1 bitwise_xor:1 compress:1 convolve:1 \
    copysign:1 corrcoef:1 correlate:1 cov:1 cross:1 delete:1 digitize:1 divide:1 divmod:1 dot:1 \
    equal:1 extract:1 float_power:1 floor_divide:1 fmax:1 fmin:1 fmod:1 full_like:1 gcd:1 \
    greater:1 greater_equal:1 heaviside:1 histogram:1 histogram_bin_edges:1 hypot:1 inner:1 \
    intersect1d:1 isclose:1 isin:1 kron:1 lcm:1 ldexp:1 left_shift:1 less:1 less_equal:1 \
    linspace:1 logaddexp:1 logaddexp2:1 logical_and:1 logical_or:1 logical_xor:1 matmul:1 \
    maximum:1 minimum:1 mod:1 multiply:1 nanpercentile:1 nanquantile:1 nextafter:1 not_equal:1 \
    outer:1 percentile:1 polyval:1 power:1 quantile:1 remainder:1 repeat:1 right_shift:1 \
    searchsorted:1 setdiff1d:1 setxor1d:1 subtract:1 take:1 take_along_axis:1 tensordot:1 \
    trapezoid:1 true_divide:1 union1d:1 vdot:1 where:2 \
    atleast_1d:* atleast_2d:* atleast_3d:* broadcast_arrays:* meshgrid:*";

/// jax.numpy's view of `v`: the same function behind JAX's argument rules.
/// Where ARRAYLIKE lists the member, JAX's check that its array arguments
/// are not lists; in a JAX program without `jax_enable_x64`, JAX's 32-bit
/// dtypes (`numpy::jax_32bit`): a 64-bit dtype argument is truncated with JAX's
/// warning, NumPy's 64-bit arrays come in as 32-bit ones, and no 64-bit
/// array comes out.
fn jax_numpy_view(module: &str, member: &str, v: Value) -> Value {
    // The table as a map, made once: start-up asks it for every member.
    thread_local! {
        static CHECKED: HashMap<&'static str, usize> = ARRAYLIKE
            .split_whitespace()
            .map(|w| {
                let (name, last) = w.split_once(':').unwrap_or((w, "0"));
                (name, last.parse::<usize>().unwrap_or(usize::MAX))
            })
            .collect();
    }
    let numpy = module == "jax.numpy";
    let checked = CHECKED.with(|c| c.get(member).copied()).filter(|_| numpy);
    let (signature, doc, dtype_at) = match &v {
        Value::Builtin(b) => (
            b.signature.clone(),
            b.doc.clone(),
            b.params
                .iter()
                .take_while(|p| p.kind == arr_lang::ast::ParamKind::Normal)
                .position(|p| &*p.name == "dtype"),
        ),
        Value::Native(n) => {
            let written = n.attrs.borrow().iter().find_map(|(k, a)| match a {
                Value::Str(s) if k == "__signature__" => Some(s.to_string()),
                _ => None,
            });
            let signature = written.unwrap_or_else(|| format!("{member}(*args, **kwargs)"));
            let dtype_at = positional_dtype(&signature);
            (signature, String::new(), dtype_at)
        }
        _ if checked.is_some() => (format!("{member}(*args, **kwargs)"), String::new(), None),
        _ => return v,
    };
    let inner = v.clone();
    let name: Rc<str> = Rc::from(member);
    let check = move |args: &[Value]| -> arr_runtime::Result<()> {
        let Some(last) = checked else { return Ok(()) };
        match args
            .iter()
            .take(last.saturating_add(1))
            .position(|a| matches!(a, Value::List(_) | Value::Tuple(_)))
        {
            Some(i) => Err(arr_runtime::Error::type_error(format!(
                "{name} requires ndarray or scalar arguments, got <class '{}'> at position {i}.",
                args[i].type_name()
            ))),
            None => Ok(()),
        }
    };
    // Python's builtins of the same names (`round`, `abs`, `max`) return
    // Python numbers for Python numbers; jax.numpy's return arrays.
    let scalar_first = checked.is_some() && !matches!(member, "linspace");
    // JAX's warning names jax.numpy's function (`requested in zeros`).
    let label: Option<Rc<str>> = numpy.then(|| Rc::from(member));
    let (params, defaults) = any_args();
    let func = move |i: &mut Interp, a: Vec<Value>| {
        let (mut args, mut kwargs) = split_any_args(a);
        check(&args)?;
        if let (true, Some(first @ (Value::Int(_) | Value::Float(_) | Value::Bool(_)))) =
            (scalar_first, args.first())
        {
            args[0] = Value::Array(numpy::to_tensor(first)?);
        }
        let x32 = i.jax_rules && numpy::jax_32bit();
        if x32 {
            for arg in args.iter_mut() {
                *arg = x32_array(std::mem::replace(arg, Value::None))?;
            }
            if let Some(d) = dtype_at.and_then(|k| args.get_mut(k)) {
                *d = x32_dtype(i, label.as_deref(), d)?;
            }
            for (k, v) in kwargs.iter_mut() {
                if &**k == "dtype" {
                    *v = x32_dtype(i, label.as_deref(), v)?;
                }
            }
        }
        // JAX's defaults, also inside a NumPy function's callback.
        let out = {
            let _defaults = numpy::numpy_defaults(false);
            i.call(&inner, args, kwargs)?
        };
        if x32 {
            x32_result(out)
        } else {
            Ok(out)
        }
    };
    let effect = match &v {
        Value::Builtin(b) => b.effect,
        _ => Default::default(),
    };
    // The builtin's own name where only dtypes are followed: `isinstance`
    // reads it (`jnp.ndarray` is `asarray`, the type of JAX arrays).
    let name = match (&v, checked) {
        (Value::Builtin(b), None) => b.name.clone(),
        _ => Rc::from(member),
    };
    Value::Builtin(Rc::new(Builtin {
        name,
        signature,
        doc,
        params,
        defaults,
        func: Rc::new(func),
        effect,
    }))
}

/// The parameters of a wrapper that binds `(*args, **kwargs)`: parsed once,
/// not per member (start-up makes a wrapper for each member).
fn any_args() -> (Vec<arr_runtime::code::ParamSpec>, Vec<Option<Value>>) {
    thread_local! {
        static ANY_ARGS: Builtin = Builtin::new("f(*args, **kwargs)", "", |_, _| Ok(Value::None));
    }
    ANY_ARGS.with(|b| (b.params.clone(), b.defaults.clone()))
}

/// A `(*args, **kwargs)` wrapper's bound arguments as positional arguments
/// and keywords, ready for `Interp::call`.
fn split_any_args(a: Vec<Value>) -> (Vec<Value>, Vec<(Rc<str>, Value)>) {
    let mut a = a.into_iter();
    let (Some(Value::Tuple(args)), Some(Value::Dict(kwargs))) = (a.next(), a.next()) else {
        unreachable!("bound as (*args, **kwargs)")
    };
    let kwargs = kwargs
        .borrow()
        .iter()
        .filter_map(|(k, v)| match k {
            arr_runtime::value::Key::Str(k) => Some((k.clone(), v.clone())),
            _ => None,
        })
        .collect();
    (args.to_vec(), kwargs)
}

/// Where `dtype` stands among a signature's positional parameters.
fn positional_dtype(signature: &str) -> Option<usize> {
    let inner = signature.split_once('(')?.1;
    inner
        .split(',')
        .map(|p| p.split('=').next().unwrap_or("").trim())
        .take_while(|p| !p.starts_with('*') && !p.starts_with(')'))
        .position(|p| p == "dtype")
}

thread_local! {
    /// The truncation warnings already shown (Python shows each once).
    static WARNED: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A `dtype=` argument of a jax.numpy function without x64: a 64-bit one is
/// its 32-bit dtype, with JAX's warning.
pub(crate) fn x32_dtype(
    interp: &mut Interp,
    function: Option<&str>,
    v: &Value,
) -> arr_runtime::Result<Value> {
    let Ok(Some(d)) = crate::args::dtype_arg(v) else {
        return Ok(v.clone());
    };
    let narrow = numpy::x32_of(d);
    if narrow == d {
        return Ok(v.clone());
    }
    let message = format!(
        "UserWarning: Explicitly requested dtype {}{} is not available, \
         and will be truncated to dtype {}. To enable more dtypes, set the jax_enable_x64 \
         configuration option or the JAX_ENABLE_X64 shell environment variable. See \
         https://github.com/jax-ml/jax#current-gotchas for more.\n",
        d.name(),
        function.map_or(String::new(), |f| format!(" requested in {f}")),
        narrow.name()
    );
    let first = WARNED.with(|w| {
        let mut w = w.borrow_mut();
        let first = !w.contains(&message);
        if first {
            w.push(message.clone());
        }
        first
    });
    if first && !crate::system::warning_ignored("UserWarning") {
        interp.emit(arr_runtime::output::RichOutput::Stderr(message));
    }
    Ok(Value::DType(narrow))
}

/// A 64-bit array as the 32-bit one JAX would make of it.
fn x32_array(v: Value) -> arr_runtime::Result<Value> {
    match v {
        Value::Array(t) if numpy::x32_of(t.dtype()) != t.dtype() => {
            let narrow = numpy::x32_of(t.dtype());
            Ok(Value::Array(numpy::convert(t, narrow)?))
        }
        other => Ok(other),
    }
}

/// A result without 64-bit arrays (an array, or a tuple or list of them).
fn x32_result(v: Value) -> arr_runtime::Result<Value> {
    match v {
        Value::Tuple(items) if items.iter().any(|x| matches!(x, Value::Array(_))) => {
            Ok(Value::tuple(
                items
                    .iter()
                    .cloned()
                    .map(x32_array)
                    .collect::<arr_runtime::Result<_>>()?,
            ))
        }
        other => x32_array(other),
    }
}

/// The members of one row, each with its value or None where arr lacks it.
fn members(interp: &Interp, spec: &str) -> Vec<(String, Option<Value>)> {
    let mut out = Vec::new();
    for word in spec.split_whitespace() {
        if let Some(module) = word.strip_prefix('*') {
            // numpy takes jax.numpy's table rather than its values: jax.numpy's
            // functions refuse lists (`jax_numpy_view`), NumPy's take them.
            if module == "jax.numpy" {
                out.extend(
                    members(interp, NUMPY)
                        .into_iter()
                        .filter(|(_, v)| v.is_some()),
                );
                continue;
            }
            match lookup(interp, module) {
                Some(Value::Module(m)) => {
                    out.extend(m.attrs.iter().map(|(k, v)| (k.clone(), Some(v.clone()))))
                }
                _ => out.push((word.to_string(), None)),
            }
            continue;
        }
        let (name, target) = word.split_once('=').unwrap_or((word, word));
        out.push((name.to_string(), lookup(interp, target)));
    }
    out
}

/// A builtin (`sum`), a member of a builtin module (`random.normal`), or a
/// namespace of this table (`@jax.numpy`, or a bare dotted name after `*`).
fn lookup(interp: &Interp, target: &str) -> Option<Value> {
    if let Some(module) = target.strip_prefix('@') {
        return interp.modules.get(module).cloned();
    }
    if let Some(m) = interp.modules.get(target) {
        return Some(m.clone());
    }
    let builtin = |name: &str| {
        let id = interp.interner.get(name)? as usize;
        interp.builtins.get(id)?.clone()
    };
    match target.split_once('.') {
        Some((module, member)) => match builtin(module)? {
            Value::Module(m) => m.attrs.get(member).cloned(),
            _ => None,
        },
        None => builtin(target),
    }
}

/// Every `module.member` of the table whose value arr does not have yet:
/// the list of JAX and NumPy names still missing (the libraries loaded first).
pub fn missing_members(interp: &mut Interp) -> Vec<String> {
    if let Err(e) = interp.load_all_libraries() {
        return vec![format!("a library failed to load: {e}")];
    }
    MODULES
        .iter()
        .flat_map(|&(name, _, spec)| {
            members(interp, spec)
                .into_iter()
                .filter(|(_, v)| v.is_none())
                .map(move |(member, _)| format!("{name}.{member}"))
        })
        .collect()
}
