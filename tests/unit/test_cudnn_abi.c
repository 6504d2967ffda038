/* test_cudnn_abi.c -- checks src/core/runtime/cudnn_api.h (tirlua's own declarations of the cuDNN
 * entry points it dlopens) against the real <cudnn.h> when the headers are installed (CMake
 * defines TIRLUA_HAVE_CUDNN_H and adds their directory): every function pointer type, enum value
 * (identical, the enums and handles being cuDNN's own types there) and the layout of
 * cudnnConvolutionFwdAlgoPerf_t (which tirlua declares with int fields: enums are int-sized).  Everything is checked at compile time; the
 * program then asks the runtime whether cuDNN can be opened here and prints the answer. */
#include <stddef.h>
#include <stdio.h>

#ifdef TIRLUA_HAVE_CUDNN_H
#include <cudnn.h>
#define TIR_CUDNN_HANDLE cudnnHandle_t
#define TIR_CUDNN_TENSOR_DESC cudnnTensorDescriptor_t
#define TIR_CUDNN_FILTER_DESC cudnnFilterDescriptor_t
#define TIR_CUDNN_CONV_DESC cudnnConvolutionDescriptor_t
#define TIR_CUDNN_STATUS cudnnStatus_t
#define TIR_CUDNN_FORMAT cudnnTensorFormat_t
#define TIR_CUDNN_DTYPE cudnnDataType_t
#define TIR_CUDNN_MODE cudnnConvolutionMode_t
#define TIR_CUDNN_MATH cudnnMathType_t
#define TIR_CUDNN_ALGO cudnnConvolutionFwdAlgo_t
#define TIR_CUDNN_PERF cudnnConvolutionFwdAlgoPerf_t
#endif
#include "../../src/core/runtime/cudnn_api.h"
#include "tir/runtime.h"

#ifdef TIRLUA_HAVE_CUDNN_H
/* enums are int-sized in the C ABI; the values must be cuDNN's */
_Static_assert(sizeof(cudnnStatus_t) == sizeof(int) && sizeof(cudnnConvolutionFwdAlgo_t) == sizeof(int), "enum size");
_Static_assert((int)TIR_CUDNN_STATUS_SUCCESS == (int)CUDNN_STATUS_SUCCESS, "status");
_Static_assert((int)TIR_CUDNN_TENSOR_NCHW == (int)CUDNN_TENSOR_NCHW && (int)TIR_CUDNN_TENSOR_NHWC == (int)CUDNN_TENSOR_NHWC, "format");
_Static_assert((int)TIR_CUDNN_DATA_FLOAT == (int)CUDNN_DATA_FLOAT && (int)TIR_CUDNN_DATA_HALF == (int)CUDNN_DATA_HALF, "dtype");
_Static_assert((int)TIR_CUDNN_CROSS_CORRELATION == (int)CUDNN_CROSS_CORRELATION, "mode");
_Static_assert((int)TIR_CUDNN_DEFAULT_MATH == (int)CUDNN_DEFAULT_MATH && (int)TIR_CUDNN_TENSOR_OP_MATH == (int)CUDNN_TENSOR_OP_MATH, "math");
_Static_assert((int)TIR_CUDNN_FWD_ALGO_COUNT == (int)CUDNN_CONVOLUTION_FWD_ALGO_COUNT, "algo count");
_Static_assert(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM == 0 && CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM == 1 &&
                   CUDNN_CONVOLUTION_FWD_ALGO_GEMM == 2 && CUDNN_CONVOLUTION_FWD_ALGO_DIRECT == 3 && CUDNN_CONVOLUTION_FWD_ALGO_FFT == 4 &&
                   CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING == 5 && CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD == 6 &&
                   CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED == 7,
               "algo names (cudnn.c ALGO_NAMES) follow the enum order");
_Static_assert(sizeof(tir_cudnnConvolutionFwdAlgoPerf_t) == sizeof(cudnnConvolutionFwdAlgoPerf_t), "perf size");
_Static_assert(offsetof(tir_cudnnConvolutionFwdAlgoPerf_t, time) == offsetof(cudnnConvolutionFwdAlgoPerf_t, time) &&
                   offsetof(tir_cudnnConvolutionFwdAlgoPerf_t, memory) == offsetof(cudnnConvolutionFwdAlgoPerf_t, memory) &&
                   offsetof(tir_cudnnConvolutionFwdAlgoPerf_t, mathType) == offsetof(cudnnConvolutionFwdAlgoPerf_t, mathType),
               "perf layout");
/* each declared pointer type is exactly the real prototype's (typeof: nothing is linked) */
#define SAME(ret, name, params) _Static_assert(__builtin_types_compatible_p(tir_##name##_t, __typeof__(&name)), #name);
TIR_CUDNN_FNS(SAME)
#endif

int main(void) {
  char why[1024];
  int ok = tir_cudnn_available(why, sizeof why);
#ifdef TIRLUA_HAVE_CUDNN_H
  printf("cudnn_abi: declarations checked against <cudnn.h> %d.%d.%d\n", CUDNN_MAJOR, CUDNN_MINOR, CUDNN_PATCHLEVEL);
#else
  printf("cudnn_abi: <cudnn.h> not installed; declarations not checked\n");
#endif
  printf("cudnn_abi: cuDNN %s here: %s\n", ok ? "opens" : "does not open", why);
  return 0;
}
