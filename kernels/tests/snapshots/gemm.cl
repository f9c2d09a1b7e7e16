#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef long i64;
typedef ulong u64;
typedef uint u32;
typedef ushort u16;
typedef uchar u8;
typedef float T;
#define A_INF ((T)INFINITY)
#define A_NAN ((T)(A_INF - A_INF))
static inline T a_abs(T x) { return fabs(x); }
static inline T a_sign(T x) { return x > 0 ? (T)1 : x < 0 ? (T)-1 : x; }
static inline int a_isnan(T x) { return x != x; }
static inline int a_isfinite(T x) { return x == x && fabs(x) != A_INF; }
static inline T a_div(T a, T b) { return a / b; }
static inline T a_max(T a, T b) { return (a > b || a != a) ? a : b; }
static inline T a_min(T a, T b) { return (a < b || a != a) ? a : b; }
static inline T a_pow(T a, T b) { return pow(a, b); }
static inline T a_tanh(T x) { return fabs(x) > 9.1f ? copysign((T)1, x) : tanh(x); }
static inline double a_divmod(double a, double b, int want_q) {
  double m = fmod(a, b);
  if (b == 0) return want_q ? a / b : m;
  double q = (a - m) / b;
  if (m != 0) { if ((b < 0) != (m < 0)) { m += b; q -= 1; } } else { m = copysign(0.0, b); }
  if (!want_q) return m;
  if (q != 0) { double fl = floor(q); return (q - fl > 0.5) ? fl + 1 : fl; }
  return copysign(0.0, a / b);
}
static inline T a_floordiv(T a, T b) { return (T)a_divmod((double)a, (double)b, 1); }
static inline T a_mod(T a, T b) { return (T)a_divmod((double)a, (double)b, 0); }
static inline float a_erfinv32(float x) {
  float ax = fabs(x);
  if (ax >= 1.0f) return ax == 1.0f ? x * INFINITY : (x - x) / (x - x);
  float w = -log((1.0f - x) * (1.0f + x)); float p;
  if (w < 5.0f) {
    w -= 2.5f; p = 2.81022636e-08f; p = fma(p, w, 3.43273939e-07f); p = fma(p, w, -3.5233877e-06f);
    p = fma(p, w, -4.39150654e-06f); p = fma(p, w, 0.00021858087f); p = fma(p, w, -0.00125372503f);
    p = fma(p, w, -0.00417768164f); p = fma(p, w, 0.246640727f); p = fma(p, w, 1.50140941f);
  } else {
    w = sqrt(w) - 3.0f; p = -0.000200214257f; p = fma(p, w, 0.000100950558f); p = fma(p, w, 0.00134934322f);
    p = fma(p, w, -0.00367342844f); p = fma(p, w, 0.00573950773f); p = fma(p, w, -0.0076224613f);
    p = fma(p, w, 0.00943887047f); p = fma(p, w, 1.00167406f); p = fma(p, w, 2.83297682f);
  }
  return p * x;
}
static inline T a_erfinv(T x) { return a_erfinv32(x); }
__kernel __attribute__((reqd_work_group_size(256, 1, 1))) void arr_gemm(__global const float* restrict A, __global const float* restrict B, __global float* restrict out0, const i64 nb, const i64 M, const i64 N, const i64 K, const i64 sab, const i64 sam, const i64 sak, const i64 sbb, const i64 sbk, const i64 sbn) {
  __local T ta[16][17]; __local T tb[16][17];
  i64 tm = (M + 15) / 16, tn = (N + 15) / 16, tiles = nb * tm * tn;
  i64 ty = ((i64)get_local_id(0)) / 16, tx = ((i64)get_local_id(0)) % 16;
  for (i64 g = ((i64)get_group_id(0)); g < tiles; g += ((i64)get_num_groups(0))) {
    i64 b = g / (tm * tn), row = ((g / tn) % tm) * 16 + ty, col = (g % tn) * 16 + tx;
    T acc = (T)0;
    for (i64 k0 = 0; k0 < K; k0 += 16) {
      i64 ka = k0 + tx, kb = k0 + ty;
      ta[ty][tx] = (row < M && ka < K) ? (T)A[b * sab + row * sam + ka * sak] : (T)0;
      tb[ty][tx] = (kb < K && col < N) ? (T)B[b * sbb + kb * sbk + col * sbn] : (T)0;
      barrier(CLK_LOCAL_MEM_FENCE);
      for (int kk = 0; kk < 16; kk++) acc += ta[ty][kk] * tb[kk][tx];
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (row < M && col < N) {
      i64 i = (b * M + row) * N + col;
      out0[i] = acc;
    }
  }
}
