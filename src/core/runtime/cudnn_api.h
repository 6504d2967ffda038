/* cudnn_api.h -- the few cuDNN 9 entry points tirlua opens with dlsym (cudnn.c), declared here
 * so that tirlua builds without cuDNN's headers.  Prototypes, enum values and the perf struct
 * follow the cuDNN API reference (cuDNN 9: cudnn_graph.h, cudnn_ops.h, cudnn_cnn.h; the legacy
 * "cudnnConvolutionForward" API, deprecated in 9 but present).  tests/unit/test_cudnn_abi.c
 * includes the real <cudnn.h> where it is installed and checks every type and value below
 * against it (the TIR_CUDNN_* handle and enum types are then cuDNN's own, so the pointer types
 * must be identical).
 */
#ifndef TIR_CUDNN_API_H
#define TIR_CUDNN_API_H

#include <stddef.h>

#ifndef TIR_CUDNN_HANDLE
#define TIR_CUDNN_HANDLE void *
#define TIR_CUDNN_TENSOR_DESC void *
#define TIR_CUDNN_FILTER_DESC void *
#define TIR_CUDNN_CONV_DESC void *
#define TIR_CUDNN_STATUS int /* cudnnStatus_t */
#define TIR_CUDNN_FORMAT int /* cudnnTensorFormat_t */
#define TIR_CUDNN_DTYPE int  /* cudnnDataType_t */
#define TIR_CUDNN_MODE int   /* cudnnConvolutionMode_t */
#define TIR_CUDNN_MATH int   /* cudnnMathType_t */
#define TIR_CUDNN_ALGO int   /* cudnnConvolutionFwdAlgo_t */
#define TIR_CUDNN_DETERMINISM int
#define TIR_CUDNN_PERF tir_cudnnConvolutionFwdAlgoPerf_t
#endif

/* cudnnStatus_t, cudnnTensorFormat_t, cudnnDataType_t, cudnnConvolutionMode_t, cudnnMathType_t,
 * cudnnConvolutionFwdAlgo_t values */
enum {
  TIR_CUDNN_STATUS_SUCCESS = 0,
  TIR_CUDNN_TENSOR_NCHW = 0,
  TIR_CUDNN_TENSOR_NHWC = 1,
  TIR_CUDNN_DATA_FLOAT = 0,
  TIR_CUDNN_DATA_HALF = 2,
  TIR_CUDNN_CROSS_CORRELATION = 1,
  TIR_CUDNN_DEFAULT_MATH = 0,
  TIR_CUDNN_TENSOR_OP_MATH = 1,
  TIR_CUDNN_FWD_ALGO_COUNT = 8
};

/* cudnnConvolutionFwdAlgoPerf_t (cudnn_cnn.h) */
typedef struct {
  int algo;        /* cudnnConvolutionFwdAlgo_t */
  int status;      /* cudnnStatus_t */
  float time;      /* milliseconds */
  size_t memory;   /* workspace bytes */
  int determinism; /* cudnnDeterminism_t */
  int mathType;    /* cudnnMathType_t */
  int reserved[3];
} tir_cudnnConvolutionFwdAlgoPerf_t;

#define TIR_CUDNN_FNS(F)                                                                                                       \
  F(size_t, cudnnGetVersion, (void))                                                                                           \
  F(const char *, cudnnGetErrorString, (TIR_CUDNN_STATUS status))                                                               \
  F(TIR_CUDNN_STATUS, cudnnCreate, (TIR_CUDNN_HANDLE * handle))                                                                  \
  F(TIR_CUDNN_STATUS, cudnnCreateTensorDescriptor, (TIR_CUDNN_TENSOR_DESC * d))                                                  \
  F(TIR_CUDNN_STATUS, cudnnDestroyTensorDescriptor, (TIR_CUDNN_TENSOR_DESC d))                                                   \
  F(TIR_CUDNN_STATUS, cudnnSetTensor4dDescriptor,                                                                                \
    (TIR_CUDNN_TENSOR_DESC d, TIR_CUDNN_FORMAT format, TIR_CUDNN_DTYPE dtype, int n, int c, int h, int w))                         \
  F(TIR_CUDNN_STATUS, cudnnCreateFilterDescriptor, (TIR_CUDNN_FILTER_DESC * d))                                                  \
  F(TIR_CUDNN_STATUS, cudnnDestroyFilterDescriptor, (TIR_CUDNN_FILTER_DESC d))                                                   \
  F(TIR_CUDNN_STATUS, cudnnSetFilter4dDescriptor,                                                                                \
    (TIR_CUDNN_FILTER_DESC d, TIR_CUDNN_DTYPE dtype, TIR_CUDNN_FORMAT format, int k, int c, int h, int w))                         \
  F(TIR_CUDNN_STATUS, cudnnCreateConvolutionDescriptor, (TIR_CUDNN_CONV_DESC * d))                                               \
  F(TIR_CUDNN_STATUS, cudnnDestroyConvolutionDescriptor, (TIR_CUDNN_CONV_DESC d))                                                \
  F(TIR_CUDNN_STATUS, cudnnSetConvolution2dDescriptor,                                                                           \
    (TIR_CUDNN_CONV_DESC d, int pad_h, int pad_w, int u, int v, int dilation_h, int dilation_w, TIR_CUDNN_MODE mode,           \
     TIR_CUDNN_DTYPE compute_type))                                                                                             \
  F(TIR_CUDNN_STATUS, cudnnSetConvolutionMathType, (TIR_CUDNN_CONV_DESC d, TIR_CUDNN_MATH math))                                 \
  F(TIR_CUDNN_STATUS, cudnnSetConvolutionGroupCount, (TIR_CUDNN_CONV_DESC d, int groups))                                        \
  F(TIR_CUDNN_STATUS, cudnnGetConvolution2dForwardOutputDim,                                                                     \
    (const TIR_CUDNN_CONV_DESC conv, const TIR_CUDNN_TENSOR_DESC x, const TIR_CUDNN_FILTER_DESC w, int *n, int *c, int *h,      \
     int *wd))                                                                                                                 \
  F(TIR_CUDNN_STATUS, cudnnFindConvolutionForwardAlgorithm,                                                                      \
    (TIR_CUDNN_HANDLE h, const TIR_CUDNN_TENSOR_DESC x, const TIR_CUDNN_FILTER_DESC w, const TIR_CUDNN_CONV_DESC conv,          \
     const TIR_CUDNN_TENSOR_DESC y, const int requested, int *returned, TIR_CUDNN_PERF *perf))               \
  F(TIR_CUDNN_STATUS, cudnnGetConvolutionForwardWorkspaceSize,                                                                   \
    (TIR_CUDNN_HANDLE h, const TIR_CUDNN_TENSOR_DESC x, const TIR_CUDNN_FILTER_DESC w, const TIR_CUDNN_CONV_DESC conv,          \
     const TIR_CUDNN_TENSOR_DESC y, TIR_CUDNN_ALGO algo, size_t *bytes))                                                       \
  F(TIR_CUDNN_STATUS, cudnnConvolutionForward,                                                                                   \
    (TIR_CUDNN_HANDLE h, const void *alpha, const TIR_CUDNN_TENSOR_DESC x, const void *xd, const TIR_CUDNN_FILTER_DESC w,      \
     const void *wd, const TIR_CUDNN_CONV_DESC conv, TIR_CUDNN_ALGO algo, void *ws, size_t ws_bytes, const void *beta,         \
     const TIR_CUDNN_TENSOR_DESC y, void *yd))

#define TIR_CUDNN_TYPEDEF(ret, name, params) typedef ret(*tir_##name##_t) params;
TIR_CUDNN_FNS(TIR_CUDNN_TYPEDEF)
#undef TIR_CUDNN_TYPEDEF

#endif
