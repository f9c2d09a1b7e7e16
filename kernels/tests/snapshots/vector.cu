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
extern "C" __global__ void __launch_bounds__(256) arr_elementwise(const float* __restrict__ in0, const float* __restrict__ in1, float* __restrict__ out0, const i64 n, const i64 d0, const i64 o1) {
  for (i64 q = ((i64)blockIdx.x) * ((i64)blockDim.x) + ((i64)threadIdx.x); q < n / 4; q += ((i64)blockDim.x) * ((i64)gridDim.x)) {
    float4 v0 = ((const float4*)in0)[q];
    T r0_x = ((T)v0.x);
    T r1_x = ((T)in1[o1]);
    T r2_x = (r0_x * r1_x);
    T r0_y = ((T)v0.y);
    T r1_y = ((T)in1[o1]);
    T r2_y = (r0_y * r1_y);
    T r0_z = ((T)v0.z);
    T r1_z = ((T)in1[o1]);
    T r2_z = (r0_z * r1_z);
    T r0_w = ((T)v0.w);
    T r1_w = ((T)in1[o1]);
    T r2_w = (r0_w * r1_w);
    ((float4*)out0)[q] = make_float4(r2_x, r2_y, r2_z, r2_w);
  }
  for (i64 i = (n / 4) * 4 + ((i64)blockIdx.x) * ((i64)blockDim.x) + ((i64)threadIdx.x); i < n; i += ((i64)blockDim.x) * ((i64)gridDim.x)) {
    T r0 = ((T)in0[i]);
    T r1 = ((T)in1[o1]);
    T r2 = (r0 * r1);
    out0[i] = r2;
  }
}
