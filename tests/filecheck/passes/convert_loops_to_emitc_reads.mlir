// RUN: byoc-opt %s -p convert-loops-to-emitc -t c | filecheck %s

// A parameter that calls of library functions only read (their `byoc.reads`
// names its position) stays `const`, as one that is only loaded does: %data
// is passed to both calls, read by the first only by its mark. %out is passed
// unmarked, so it may be written: no `const`.
// CHECK:      int32_t reads(const uint8_t* restrict v0, const int8_t* restrict v1, int32_t* restrict v2) {
// CHECK-NEXT:   byoc_rt_int8_conv_weight_sums(8, 9, v1, v2);
// CHECK-NEXT:   byoc_rt_int8_pack_image(4, 3, 3, v0, 0, 1, 5, 5, 1, 1, 0, 0, 0, 1, v2);
func.func private @byoc_rt_int8_conv_weight_sums(index, index, memref<1x1x3x3x8x4xi8>, memref<104xi32>) -> ()
func.func private @byoc_rt_int8_pack_image(index, index, index, memref<1x4x3x3xui8>, index, index, index, index, index, index, index, index, index, index, memref<104xi32>) -> ()
func.func private @byoc_rt_int8_uses_data(index, memref<4xui8>) -> ()

func.func @reads(%data: memref<1x4x3x3xui8>, %weight: memref<1x1x3x3x8x4xi8>, %out: memref<104xi32>) -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c8 = arith.constant 8 : index
  %c9 = arith.constant 9 : index
  func.call @byoc_rt_int8_conv_weight_sums(%c8, %c9, %weight, %out) {byoc.reads = array<i64: 2>} : (index, index, memref<1x1x3x3x8x4xi8>, memref<104xi32>) -> ()
  func.call @byoc_rt_int8_pack_image(%c4, %c3, %c3, %data, %c0, %c1, %c5, %c5, %c1, %c1, %c0, %c0, %c0, %c1, %out) {byoc.reads = array<i64: 3>} : (index, index, index, memref<1x4x3x3xui8>, index, index, index, index, index, index, index, index, index, index, memref<104xi32>) -> ()
  %ok = arith.constant 0 : i32
  func.return %ok : i32
}

// CHECK:      int32_t unmarked(uint8_t* restrict v0) {
func.func @unmarked(%data: memref<4xui8>) -> i32 {
  %c4 = arith.constant 4 : index
  func.call @byoc_rt_int8_uses_data(%c4, %data) : (index, memref<4xui8>) -> ()
  %ok = arith.constant 0 : i32
  func.return %ok : i32
}
