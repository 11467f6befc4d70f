// Included last by every per-ISA kernel_list.h: undefines the list macros (kernel_list_begin.h)
// and the includer's mode, so the next inclusion of a list starts clean.
#undef EDGELLM_KERNEL_LIST_MATMUL_
#undef EDGELLM_MATMUL_FLOAT
#undef EDGELLM_MATMUL_LEGACY
#undef EDGELLM_MATMUL_KQUANT
#undef EDGELLM_MATMUL_PACKED
#undef EDGELLM_QUANTIZE
#undef EDGELLM_DEQUANTIZE
#undef EDGELLM_VECTOR_OP
#undef EDGELLM_KERNEL_LIST_DECLARE
#undef EDGELLM_KERNEL_LIST_INSTALL
