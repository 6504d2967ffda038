/* cudnn_api.h -- the few cuDNN 9 entry points tirlua opens with dlsym (cudnn.c), declared here
 * so that tirlua builds without cuDNN's headers.  Prototypes, enum values and the perf struct
 * follow the cuDNN API reference (cuDNN 9: cudnn_graph.h, cudnn_ops.h, cudnn_cnn.h; the legacy
 * "cudnnConvolutionForward" API, deprecated in 9 but present; the backend / graph API,
 * cudnnBackend*, with its descriptor, attribute and note enums).  tests/unit/test_cudnn_abi.c
 * includes the real <cudnn.h> where it is installed and checks every type and value below
 * against it (the TIR_CUDNN_* handle and enum types are then cuDNN's own, so the pointer types
 * must be identical).
 */
#ifndef TIR_CUDNN_API_H
#define TIR_CUDNN_API_H

#include <stddef.h>
#include <stdint.h>

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
#define TIR_CUDNN_BACKEND_DESC void *
#define TIR_CUDNN_BACKEND_TYPE int  /* cudnnBackendDescriptorType_t */
#define TIR_CUDNN_BACKEND_ATTR int  /* cudnnBackendAttributeName_t */
#define TIR_CUDNN_BACKEND_ATYPE int /* cudnnBackendAttributeType_t */
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
  TIR_CUDNN_FWD_ALGO_COUNT = 8,
  TIR_CUDNN_STATUS_NOT_SUPPORTED = 3000
};

/* The backend (graph) API, cudnn_graph.h: descriptor types (cudnnBackendDescriptorType_t),
 * attribute names (cudnnBackendAttributeName_t), attribute types (cudnnBackendAttributeType_t),
 * heuristic modes, numerical and behaviour notes, and the knob count. */
enum {
  TIR_CUDNN_BK_CONVOLUTION = 1,
  TIR_CUDNN_BK_ENGINE = 2,
  TIR_CUDNN_BK_ENGINECFG = 3,
  TIR_CUDNN_BK_ENGINEHEUR = 4,
  TIR_CUDNN_BK_EXECUTION_PLAN = 5,
  TIR_CUDNN_BK_KNOB_CHOICE = 7,
  TIR_CUDNN_BK_OPERATION_CONVOLUTION_FORWARD = 10,
  TIR_CUDNN_BK_OPERATIONGRAPH = 15,
  TIR_CUDNN_BK_VARIANT_PACK = 16,
  TIR_CUDNN_BK_TENSOR = 17
};
enum {
  TIR_CUDNN_ATTR_CONVOLUTION_COMP_TYPE = 100,
  TIR_CUDNN_ATTR_CONVOLUTION_CONV_MODE = 101,
  TIR_CUDNN_ATTR_CONVOLUTION_DILATIONS = 102,
  TIR_CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES = 103,
  TIR_CUDNN_ATTR_CONVOLUTION_POST_PADDINGS = 104,
  TIR_CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS = 105,
  TIR_CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS = 106,
  TIR_CUDNN_ATTR_ENGINEHEUR_MODE = 200,
  TIR_CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH = 201,
  TIR_CUDNN_ATTR_ENGINEHEUR_RESULTS = 202,
  TIR_CUDNN_ATTR_ENGINECFG_ENGINE = 300,
  TIR_CUDNN_ATTR_ENGINECFG_KNOB_CHOICES = 302,
  TIR_CUDNN_ATTR_EXECUTION_PLAN_HANDLE = 400,
  TIR_CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG = 401,
  TIR_CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE = 402,
  TIR_CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE = 600,
  TIR_CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE = 601,
  TIR_CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA = 700,
  TIR_CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA = 701,
  TIR_CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC = 702,
  TIR_CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W = 703,
  TIR_CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X = 704,
  TIR_CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y = 705,
  TIR_CUDNN_ATTR_OPERATIONGRAPH_HANDLE = 800,
  TIR_CUDNN_ATTR_OPERATIONGRAPH_OPS = 801,
  TIR_CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT = 900,
  TIR_CUDNN_ATTR_TENSOR_DATA_TYPE = 901,
  TIR_CUDNN_ATTR_TENSOR_DIMENSIONS = 902,
  TIR_CUDNN_ATTR_TENSOR_STRIDES = 903,
  TIR_CUDNN_ATTR_TENSOR_UNIQUE_ID = 906,
  TIR_CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS = 1000,
  TIR_CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS = 1001,
  TIR_CUDNN_ATTR_VARIANT_PACK_WORKSPACE = 1003,
  TIR_CUDNN_ATTR_ENGINE_GLOBAL_INDEX = 1301,
  TIR_CUDNN_ATTR_ENGINE_NUMERICAL_NOTE = 1303,
  TIR_CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE = 1305
};
enum {
  TIR_CUDNN_TYPE_HANDLE = 0,
  TIR_CUDNN_TYPE_DATA_TYPE = 1,
  TIR_CUDNN_TYPE_INT64 = 3,
  TIR_CUDNN_TYPE_FLOAT = 4,
  TIR_CUDNN_TYPE_VOID_PTR = 6,
  TIR_CUDNN_TYPE_CONVOLUTION_MODE = 7,
  TIR_CUDNN_TYPE_HEUR_MODE = 8,
  TIR_CUDNN_TYPE_KNOB_TYPE = 9,
  TIR_CUDNN_TYPE_NUMERICAL_NOTE = 11,
  TIR_CUDNN_TYPE_BACKEND_DESCRIPTOR = 15,
  TIR_CUDNN_TYPE_BEHAVIOR_NOTE = 19
};
enum {
  TIR_CUDNN_HEUR_MODE_FALLBACK = 2,
  TIR_CUDNN_HEUR_MODE_A = 3,
  TIR_CUDNN_NUMERICAL_NOTE_TENSOR_CORE = 0,
  TIR_CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS = 1,
  TIR_CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION = 2,
  TIR_CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION = 0,
  TIR_CUDNN_KNOB_TYPE_COUNTS = 44 /* knob types 0 .. 43 (cudnnBackendKnobType_t) */
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
     const TIR_CUDNN_TENSOR_DESC y, void *yd))                                                                                  \
  F(TIR_CUDNN_STATUS, cudnnFindConvolutionForwardAlgorithmEx,                                                                    \
    (TIR_CUDNN_HANDLE h, const TIR_CUDNN_TENSOR_DESC x, const void *xd, const TIR_CUDNN_FILTER_DESC w, const void *wd,         \
     const TIR_CUDNN_CONV_DESC conv, const TIR_CUDNN_TENSOR_DESC y, void *yd, const int requested, int *returned,              \
     TIR_CUDNN_PERF *perf, void *ws, size_t ws_bytes))                                                                         \
  F(TIR_CUDNN_STATUS, cudnnBackendCreateDescriptor, (TIR_CUDNN_BACKEND_TYPE type, TIR_CUDNN_BACKEND_DESC * d))                  \
  F(TIR_CUDNN_STATUS, cudnnBackendDestroyDescriptor, (TIR_CUDNN_BACKEND_DESC d))                                                \
  F(TIR_CUDNN_STATUS, cudnnBackendFinalize, (TIR_CUDNN_BACKEND_DESC d))                                                         \
  F(TIR_CUDNN_STATUS, cudnnBackendSetAttribute,                                                                                  \
    (TIR_CUDNN_BACKEND_DESC d, TIR_CUDNN_BACKEND_ATTR name, TIR_CUDNN_BACKEND_ATYPE type, int64_t count, const void *values))   \
  F(TIR_CUDNN_STATUS, cudnnBackendGetAttribute,                                                                                  \
    (TIR_CUDNN_BACKEND_DESC const d, TIR_CUDNN_BACKEND_ATTR name, TIR_CUDNN_BACKEND_ATYPE type, int64_t requested,             \
     int64_t *count, void *values))                                                                                            \
  F(TIR_CUDNN_STATUS, cudnnBackendExecute, (TIR_CUDNN_HANDLE h, TIR_CUDNN_BACKEND_DESC plan, TIR_CUDNN_BACKEND_DESC pack))

#define TIR_CUDNN_TYPEDEF(ret, name, params) typedef ret(*tir_##name##_t) params;
TIR_CUDNN_FNS(TIR_CUDNN_TYPEDEF)
#undef TIR_CUDNN_TYPEDEF

#endif
