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
extern "C" __global__ void __launch_bounds__(256) arr_reduce(const float* __restrict__ in0, const float* __restrict__ in1, float* __restrict__ out0, const i64 n, const i64 d0, const i64 d1, const i64 o0, const i64 s0_0, const i64 s0_1, const i64 o1, const i64 s1_0, const i64 s1_1, const i64 nr, const i64 nk, const i64 parts, const i64 chunk) {
  __shared__ T sh0[256];
  i64 rows = nk * parts;
  for (i64 g = ((i64)blockIdx.x); g < rows; g += ((i64)gridDim.x)) {
    i64 row = g / parts, part = g % parts;
    i64 lo = part * chunk, hi = lo + chunk < nr ? lo + chunk : nr;
    T acc0 = (T)0;
    for (i64 j = lo + ((i64)threadIdx.x); j < hi; j += ((i64)blockDim.x)) {
    i64 i = row * nr + j;
    i64 rem = i;
    i64 c1 = rem % d1; rem /= d1;
    i64 c0 = rem % d0; rem /= d0;
    T r0 = ((T)in0[o0 + c0 * s0_0 + c1 * s0_1]);
    T r1 = ((T)in1[o1 + c0 * s1_0 + c1 * s1_1]);
    T r2 = (r0 + r1);
    T r3 = a_tanh(r2);
    T r4 = 2.0f;
    T r5 = (r3 * r4);
    acc0 = (acc0 + r5);
    }
    sh0[((i64)threadIdx.x)] = acc0;
    __syncthreads();
    for (int w = 256 / 2; w > 32; w >>= 1) {
      if (((i64)threadIdx.x) < w) {
        sh0[((i64)threadIdx.x)] = (sh0[((i64)threadIdx.x)] + sh0[((i64)threadIdx.x) + w]);
      }
      __syncthreads();
    }
    if (((i64)threadIdx.x) < 32) {
      T v0 = (sh0[((i64)threadIdx.x)] + sh0[((i64)threadIdx.x) + 32]);
      for (int m = 16; m > 0; m >>= 1) v0 = (v0 + __shfl_xor_sync(0xffffffffu, v0, m));
      if (((i64)threadIdx.x) == 0) sh0[0] = v0;
    }
    __syncthreads();
    if (((i64)threadIdx.x) == 0) {
      out0[g] = sh0[0];
    }
    __syncthreads();
  }
}
