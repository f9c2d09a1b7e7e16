typedef long long i64;
typedef unsigned long long u64;
typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned char u8;
typedef float T;
#define A_INF ((T)__int_as_float(0x7f800000))
#define A_NAN ((T)(A_INF - A_INF))
static __device__ __forceinline__ T a_abs(T x) { return fabsf(x); }
static __device__ __forceinline__ T a_sign(T x) { return x > 0 ? (T)1 : x < 0 ? (T)-1 : x; }
static __device__ __forceinline__ int a_isnan(T x) { return x != x; }
static __device__ __forceinline__ int a_isfinite(T x) { return x == x && fabsf(x) != A_INF; }
static __device__ __forceinline__ T a_div(T a, T b) { return a / b; }
static __device__ __forceinline__ T a_max(T a, T b) { return (a > b || a != a) ? a : b; }
static __device__ __forceinline__ T a_min(T a, T b) { return (a < b || a != a) ? a : b; }
static __device__ __forceinline__ T a_pow(T a, T b) { return powf(a, b); }
static __device__ __forceinline__ T a_tanh(T x) { return fabsf(x) > 9.1f ? copysignf((T)1, x) : tanhf(x); }
static __device__ __forceinline__ double a_divmod(double a, double b, int want_q) {
  double m = fmod(a, b);
  if (b == 0) return want_q ? a / b : m;
  double q = (a - m) / b;
  if (m != 0) { if ((b < 0) != (m < 0)) { m += b; q -= 1; } } else { m = copysign(0.0, b); }
  if (!want_q) return m;
  if (q != 0) { double fl = floor(q); return (q - fl > 0.5) ? fl + 1 : fl; }
  return copysign(0.0, a / b);
}
static __device__ __forceinline__ T a_floordiv(T a, T b) { return (T)a_divmod((double)a, (double)b, 1); }
static __device__ __forceinline__ T a_mod(T a, T b) { return (T)a_divmod((double)a, (double)b, 0); }
static __device__ __forceinline__ T a_erfinv(T x) { return erfinvf(x); }
extern "C" __global__ void __launch_bounds__(256) arr_gemm(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ out0, const i64 nb, const i64 M, const i64 N, const i64 K, const i64 sab, const i64 sam, const i64 sak, const i64 sbb, const i64 sbk, const i64 sbn) {
  __shared__ T ta[16][17]; __shared__ T tb[16][17];
  i64 tm = (M + 15) / 16, tn = (N + 15) / 16, tiles = nb * tm * tn;
  i64 ty = ((i64)threadIdx.x) / 16, tx = ((i64)threadIdx.x) % 16;
  for (i64 g = ((i64)blockIdx.x); g < tiles; g += ((i64)gridDim.x)) {
    i64 b = g / (tm * tn), row = ((g / tn) % tm) * 16 + ty, col = (g % tn) * 16 + tx;
    T acc = (T)0;
    for (i64 k0 = 0; k0 < K; k0 += 16) {
      i64 ka = k0 + tx, kb = k0 + ty;
      ta[ty][tx] = (row < M && ka < K) ? (T)A[b * sab + row * sam + ka * sak] : (T)0;
      tb[ty][tx] = (kb < K && col < N) ? (T)B[b * sbb + kb * sbk + col * sbn] : (T)0;
      __syncthreads();
      for (int kk = 0; kk < 16; kk++) acc += ta[ty][kk] * tb[kk][tx];
      __syncthreads();
    }
    if (row < M && col < N) {
      i64 i = (b * M + row) * N + col;
      out0[i] = acc;
    }
  }
}
