//===- ProductOrder.h - Whether a product's rows depend on each other -*- C++ -*-===//
//
// The kernels a matrix product runs on depend on how many activation rows it has (a GEMV for a
// few, oneDNN's GEMM for many; a row alone in a quantized tile takes a factored form), and each
// sums a row's products in its own order: the same row can come out a few ulps different in a
// batch of 1 and a batch of 40. Batch-invariant mode (docs/Engine.md, "Batch-invariant mode")
// asks for one kernel and one summation order per output for every row count instead. The
// engine sets the order for the step it runs on the thread that runs it; linear(),
// linearAdd() and quantizedProduct() read it.
//
//===----------------------------------------------------------------------===//

#ifndef NNSC_RUNTIME_LAYERS_PRODUCTORDER_H
#define NNSC_RUNTIME_LAYERS_PRODUCTORDER_H

namespace nnsc {

enum class ProductOrder {
  /// The fastest kernel for the number of rows.
  Fastest,
  /// Each output's sum in an order that depends on its own row and column only: a row's
  /// result is the same bits whatever rows share the product.
  RowInvariant,
};

namespace detail {
inline ProductOrder &threadProductOrder() {
  thread_local ProductOrder order = ProductOrder::Fastest;
  return order;
}
} // namespace detail

/// The order in force on this thread.
inline ProductOrder productOrder() { return detail::threadProductOrder(); }

/// Sets this thread's order while it lives, and restores the one before.
class ScopedProductOrder {
public:
  explicit ScopedProductOrder(ProductOrder order) : before(productOrder()) {
    detail::threadProductOrder() = order;
  }
  ~ScopedProductOrder() { detail::threadProductOrder() = before; }
  ScopedProductOrder(const ScopedProductOrder &) = delete;
  ScopedProductOrder &operator=(const ScopedProductOrder &) = delete;

private:
  ProductOrder before;
};

} // namespace nnsc

#endif // NNSC_RUNTIME_LAYERS_PRODUCTORDER_H
