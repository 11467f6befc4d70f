// Included first by every per-ISA kernel_list.h (like the lists, no include guard). A list has
// one line per kernel the ISA puts into the dispatch table (kernel_table.h):
//
//   EDGELLM_MATMUL_FLOAT(type, fn, K)   matmul[type] = fn: F32 / F16 / BF16 weights, tiled driver
//   EDGELLM_MATMUL_LEGACY(type, fn, K)  Q4_0 / Q4_1 / Q5_0 / Q5_1 / Q8_0 blocks
//   EDGELLM_MATMUL_KQUANT(type, fn, K)  Q4_K / Q5_K / Q6_K super-blocks
//   EDGELLM_MATMUL_PACKED(type, fn, K)  the repacked 16-row groups (repack.h), packed driver
//   EDGELLM_QUANTIZE(type, fn)          quantize_activation[type] = fn
//   EDGELLM_DEQUANTIZE(type, fn)        dequantize[type] = fn
//   EDGELLM_VECTOR_OP(fn)               the table field named fn = fn (same name, same type)
//
// `type` is a TensorType enumerator; K is the policy the trampoline `fn` instantiates its file's
// driver with (a name only that file needs to see). The list is read three ways:
//
//   <isa>_kernels.h  defines EDGELLM_KERNEL_LIST_DECLARE: declares every kernel with the type of
//                    its table field, so a kernel with a wrong signature does not compile;
//   install.cpp      defines EDGELLM_KERNEL_LIST_INSTALL as the ISA's namespace: assigns every
//                    kernel to its slot of the table, which must be named `t`;
//   a matmul_*.cpp   defines the group macro(s) of the kernels it implements as trampolines into
//                    its driver (EDGELLM_MATMUL_PARAMS / _ARGS, kernel_table.h); the groups it
//                    does not define expand to nothing.
//
// So adding a kernel to an ISA is its code plus one line in the ISA's list. The includer provides
// <type_traits> and kernels/kernel_table.h; kernel_list_end.h undefines everything.

#if defined(EDGELLM_KERNEL_LIST_DECLARE)
#define EDGELLM_KERNEL_LIST_MATMUL_(type, fn, K) std::remove_pointer_t<::edgellm::kernels::MatmulFn> fn;
#define EDGELLM_MATMUL_FLOAT EDGELLM_KERNEL_LIST_MATMUL_
#define EDGELLM_MATMUL_LEGACY EDGELLM_KERNEL_LIST_MATMUL_
#define EDGELLM_MATMUL_KQUANT EDGELLM_KERNEL_LIST_MATMUL_
#define EDGELLM_MATMUL_PACKED EDGELLM_KERNEL_LIST_MATMUL_
#define EDGELLM_QUANTIZE(type, fn) std::remove_pointer_t<::edgellm::kernels::QuantizeFn> fn;
#define EDGELLM_DEQUANTIZE(type, fn) std::remove_pointer_t<::edgellm::kernels::DequantizeFn> fn;
#define EDGELLM_VECTOR_OP(fn) std::remove_pointer_t<decltype(::edgellm::kernels::KernelTable::fn)> fn;
#elif defined(EDGELLM_KERNEL_LIST_INSTALL)
#define EDGELLM_KERNEL_LIST_MATMUL_(type, fn, K) \
  t.matmul[type_slot(TensorType::type)] = EDGELLM_KERNEL_LIST_INSTALL::fn;
#define EDGELLM_MATMUL_FLOAT EDGELLM_KERNEL_LIST_MATMUL_
#define EDGELLM_MATMUL_LEGACY EDGELLM_KERNEL_LIST_MATMUL_
#define EDGELLM_MATMUL_KQUANT EDGELLM_KERNEL_LIST_MATMUL_
#define EDGELLM_MATMUL_PACKED EDGELLM_KERNEL_LIST_MATMUL_
#define EDGELLM_QUANTIZE(type, fn) t.quantize_activation[type_slot(TensorType::type)] = EDGELLM_KERNEL_LIST_INSTALL::fn;
#define EDGELLM_DEQUANTIZE(type, fn) t.dequantize[type_slot(TensorType::type)] = EDGELLM_KERNEL_LIST_INSTALL::fn;
#define EDGELLM_VECTOR_OP(fn) t.fn = EDGELLM_KERNEL_LIST_INSTALL::fn;
#endif

#ifndef EDGELLM_MATMUL_FLOAT
#define EDGELLM_MATMUL_FLOAT(type, fn, K)
#endif
#ifndef EDGELLM_MATMUL_LEGACY
#define EDGELLM_MATMUL_LEGACY(type, fn, K)
#endif
#ifndef EDGELLM_MATMUL_KQUANT
#define EDGELLM_MATMUL_KQUANT(type, fn, K)
#endif
#ifndef EDGELLM_MATMUL_PACKED
#define EDGELLM_MATMUL_PACKED(type, fn, K)
#endif
#ifndef EDGELLM_QUANTIZE
#define EDGELLM_QUANTIZE(type, fn)
#endif
#ifndef EDGELLM_DEQUANTIZE
#define EDGELLM_DEQUANTIZE(type, fn)
#endif
#ifndef EDGELLM_VECTOR_OP
#define EDGELLM_VECTOR_OP(fn)
#endif
