// RUN: byoc-opt %s | filecheck %s
// RUN: byoc-opt %s --print-op-generic | byoc-opt | filecheck %s
// RUN: byoc-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// Every quantized op in its custom form, and the generic form hidden tests
// write (operands in TVM QNN's order, attributes as properties).

// CHECK-LABEL: func.func @quantize(
// CHECK:         %0 = relay.qnn.quantize %x, %s, %z {out_dtype = "uint8"} : (tensor<2x8xf32>, tensor<f32>, tensor<i32>) -> tensor<2x8xui8>
// CHECK-NEXT:    %1 = relay.qnn.quantize %x, %cs, %cz {axis = 1 : i64} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xi32>) -> tensor<2x8xi8>
// CHECK-NEXT:    %2 = relay.qnn.dequantize %0, %s, %z : (tensor<2x8xui8>, tensor<f32>, tensor<i32>) -> tensor<2x8xf32>
// CHECK-NEXT:    %3 = relay.qnn.dequantize %1, %cs, %cz : (tensor<2x8xi8>, tensor<8xf32>, tensor<8xi32>) -> tensor<2x8xf32>
// CHECK-NEXT:    %4 = relay.qnn.requantize %1, %cs, %cz, %s, %z {axis = 1 : i64, out_dtype = "uint8"} : (tensor<2x8xi8>, tensor<8xf32>, tensor<8xi32>, tensor<f32>, tensor<i32>) -> tensor<2x8xui8>

// GENERIC-LABEL: sym_name = "quantize"
// GENERIC:       "relay.qnn.quantize"(%x, %s, %z) <{axis = -1 : i64, out_dtype = "uint8"}> : (tensor<2x8xf32>, tensor<f32>, tensor<i32>) -> tensor<2x8xui8>
// GENERIC:       "relay.qnn.quantize"(%x, %cs, %cz) <{axis = 1 : i64}> : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xi32>) -> tensor<2x8xi8>
// GENERIC:       "relay.qnn.dequantize"(%{{.*}}, %s, %z) <{axis = -1 : i64}> : (tensor<2x8xui8>, tensor<f32>, tensor<i32>) -> tensor<2x8xf32>
// GENERIC:       "relay.qnn.requantize"(%{{.*}}, %cs, %cz, %s, %z) <{axis = 1 : i64, out_dtype = "uint8"}>
func.func @quantize(%x: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xui8>) {
  %s = relay.constant dense<0.5> : tensor<f32>
  %z = relay.constant dense<3> : tensor<i32>
  %cs = relay.constant dense<[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]> : tensor<8xf32>
  %cz = relay.constant dense<[0, 1, 2, 3, -4, -5, -6, 127]> : tensor<8xi32>
  %0 = "relay.qnn.quantize"(%x, %s, %z) <{out_dtype = "uint8"}> : (tensor<2x8xf32>, tensor<f32>, tensor<i32>) -> tensor<2x8xui8>
  %1 = "relay.qnn.quantize"(%x, %cs, %cz) <{axis = 1 : i64}> : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xi32>) -> tensor<2x8xi8>
  %2 = "relay.qnn.dequantize"(%0, %s, %z) : (tensor<2x8xui8>, tensor<f32>, tensor<i32>) -> tensor<2x8xf32>
  %3 = relay.qnn.dequantize %1, %cs, %cz {axis = -1 : i64} : (tensor<2x8xi8>, tensor<8xf32>, tensor<8xi32>) -> tensor<2x8xf32>
  %4 = "relay.qnn.requantize"(%1, %cs, %cz, %s, %z) <{axis = 1 : i64, out_dtype = "uint8"}> : (tensor<2x8xi8>, tensor<8xf32>, tensor<8xi32>, tensor<f32>, tensor<i32>) -> tensor<2x8xui8>
  func.return %2, %3, %4 : tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xui8>
}

// 16-bit activations (A16W8 models): quantize, dequantize and requantize.
// CHECK-LABEL: func.func @sixteen_bit(
// CHECK:         %0 = relay.qnn.quantize %x, %s, %z {out_dtype = "int16"} : (tensor<2x8xf32>, tensor<f32>, tensor<i32>) -> tensor<2x8xi16>
// CHECK-NEXT:    %1 = relay.qnn.requantize %0, %s, %z, %s, %uz {out_dtype = "uint16"} : (tensor<2x8xi16>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i32>) -> tensor<2x8xui16>
// CHECK-NEXT:    %2 = relay.qnn.dequantize %1, %s, %uz : (tensor<2x8xui16>, tensor<f32>, tensor<i32>) -> tensor<2x8xf32>
// GENERIC-LABEL: sym_name = "sixteen_bit"
// GENERIC:       "relay.qnn.quantize"(%x, %s, %z) <{axis = -1 : i64, out_dtype = "int16"}> : (tensor<2x8xf32>, tensor<f32>, tensor<i32>) -> tensor<2x8xi16>
func.func @sixteen_bit(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %s = relay.constant dense<0.5> : tensor<f32>
  %z = relay.constant dense<-32768> : tensor<i32>
  %uz = relay.constant dense<65535> : tensor<i32>
  %0 = "relay.qnn.quantize"(%x, %s, %z) <{out_dtype = "int16"}> : (tensor<2x8xf32>, tensor<f32>, tensor<i32>) -> tensor<2x8xi16>
  %1 = relay.qnn.requantize %0, %s, %z, %s, %uz {out_dtype = "uint16"} : (tensor<2x8xi16>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i32>) -> tensor<2x8xui16>
  %2 = relay.qnn.dequantize %1, %s, %uz : (tensor<2x8xui16>, tensor<f32>, tensor<i32>) -> tensor<2x8xf32>
  func.return %2 : tensor<2x8xf32>
}

// CHECK-LABEL: func.func @products(
// CHECK:         %0 = relay.qnn.conv2d %x, %w, %z, %cz, %s, %cs {padding = array<i64: 1, 1>, out_dtype = "int32"} : (tensor<1x4x6x6xui8>, tensor<8x4x3x3xi8>, tensor<i32>, tensor<8xi32>, tensor<f32>, tensor<8xf32>) -> tensor<1x8x6x6xi32>
// CHECK-NEXT:    %1 = relay.nn.bias_add %0, %b : (tensor<1x8x6x6xi32>, tensor<8xi32>) -> tensor<1x8x6x6xi32>
// CHECK-NEXT:    %2 = relay.qnn.requantize %1, %cs, %z, %s, %z {axis = 1 : i64, out_dtype = "uint8"} : (tensor<1x8x6x6xi32>, tensor<8xf32>, tensor<i32>, tensor<f32>, tensor<i32>) -> tensor<1x8x6x6xui8>
// CHECK-NEXT:    %3 = relay.clip %2 {a_min = 3.000000e+00 : f64, a_max = 2.550000e+02 : f64} : (tensor<1x8x6x6xui8>) -> tensor<1x8x6x6xui8>
// CHECK-NEXT:    %4 = relay.qnn.dense %d, %dw, %z, %cz, %s, %cs : (tensor<3x16xui8>, tensor<8x16xi8>, tensor<i32>, tensor<8xi32>, tensor<f32>, tensor<8xf32>) -> tensor<3x8xi32>
// CHECK-NEXT:    %5 = relay.qnn.batch_matmul %p, %q, %z, %z, %s, %s {transpose_b = false} : (tensor<2x4x16xi8>, tensor<2x16x5xi8>, tensor<i32>, tensor<i32>, tensor<f32>, tensor<f32>) -> tensor<2x4x5xi32>

// GENERIC-LABEL: sym_name = "products"
// GENERIC:       "relay.qnn.conv2d"(%x, %w, %z, %cz, %s, %cs) <{strides = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64, data_layout = "NCHW", kernel_layout = "OIHW", out_dtype = "int32"}>
// GENERIC:       "relay.qnn.dense"(%d, %dw, %z, %cz, %s, %cs) : (tensor<3x16xui8>, tensor<8x16xi8>, tensor<i32>, tensor<8xi32>, tensor<f32>, tensor<8xf32>) -> tensor<3x8xi32>
// GENERIC:       "relay.qnn.batch_matmul"(%p, %q, %z, %z, %s, %s) <{transpose_a = false, transpose_b = false}>
func.func @products(%x: tensor<1x4x6x6xui8>, %w: tensor<8x4x3x3xi8>, %b: tensor<8xi32>, %d: tensor<3x16xui8>, %dw: tensor<8x16xi8>, %p: tensor<2x4x16xi8>, %q: tensor<2x16x5xi8>) -> (tensor<1x8x6x6xui8>, tensor<3x8xi32>, tensor<2x4x5xi32>) {
  %s = relay.constant dense<0.5> : tensor<f32>
  %z = relay.constant dense<3> : tensor<i32>
  %cs = relay.constant dense<[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]> : tensor<8xf32>
  %cz = relay.constant dense<0> : tensor<8xi32>
  %0 = "relay.qnn.conv2d"(%x, %w, %z, %cz, %s, %cs) <{padding = array<i64: 1, 1>, groups = 1 : i64, out_dtype = "int32"}> : (tensor<1x4x6x6xui8>, tensor<8x4x3x3xi8>, tensor<i32>, tensor<8xi32>, tensor<f32>, tensor<8xf32>) -> tensor<1x8x6x6xi32>
  %1 = relay.nn.bias_add %0, %b : (tensor<1x8x6x6xi32>, tensor<8xi32>) -> tensor<1x8x6x6xi32>
  %2 = relay.qnn.requantize %1, %cs, %z, %s, %z {axis = 1 : i64, out_dtype = "uint8"} : (tensor<1x8x6x6xi32>, tensor<8xf32>, tensor<i32>, tensor<f32>, tensor<i32>) -> tensor<1x8x6x6xui8>
  %3 = relay.clip %2 {a_min = 3.0 : f64, a_max = 255.0 : f64} : (tensor<1x8x6x6xui8>) -> tensor<1x8x6x6xui8>
  %4 = "relay.qnn.dense"(%d, %dw, %z, %cz, %s, %cs) : (tensor<3x16xui8>, tensor<8x16xi8>, tensor<i32>, tensor<8xi32>, tensor<f32>, tensor<8xf32>) -> tensor<3x8xi32>
  %5 = "relay.qnn.batch_matmul"(%p, %q, %z, %z, %s, %s) <{transpose_b = false}> : (tensor<2x4x16xi8>, tensor<2x16x5xi8>, tensor<i32>, tensor<i32>, tensor<f32>, tensor<f32>) -> tensor<2x4x5xi32>
  func.return %3, %4, %5 : tensor<1x8x6x6xui8>, tensor<3x8xi32>, tensor<2x4x5xi32>
}

// CHECK-LABEL: func.func @elementwise(
// CHECK:         %0 = relay.qnn.add %a, %b, %s, %z, %t, %z, %s, %z : (tensor<2x8xi8>, tensor<8xi8>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i32>) -> tensor<2x8xi8>
// CHECK-NEXT:    %1 = relay.qnn.mul %0, %a, %s, %z, %s, %z, %t, %z : (tensor<2x8xi8>, tensor<2x8xi8>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i32>) -> tensor<2x8xi8>
// CHECK-NEXT:    %2 = relay.qnn.global_avg_pool2d %i, %s, %z, %t, %z : (tensor<1x8x4x4xi8>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i32>) -> tensor<1x8x1x1xi8>
// CHECK-NEXT:    %3 = relay.nn.max_pool2d %i {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x8x4x4xi8>) -> tensor<1x8x2x2xi8>
// CHECK-NEXT:    %4 = relay.reshape %3 {newshape = array<i64: 1, 32>} : (tensor<1x8x2x2xi8>) -> tensor<1x32xi8>

// GENERIC-LABEL: sym_name = "elementwise"
// GENERIC:       "relay.qnn.add"(%a, %b, %s, %z, %t, %z, %s, %z) <{lhs_axis = -1 : i64, rhs_axis = -1 : i64}>
// GENERIC:       "relay.qnn.global_avg_pool2d"(%i, %s, %z, %t, %z) <{layout = "NCHW"}>
func.func @elementwise(%a: tensor<2x8xi8>, %b: tensor<8xi8>, %i: tensor<1x8x4x4xi8>) -> (tensor<2x8xi8>, tensor<1x8x1x1xi8>, tensor<1x32xi8>) {
  %s = relay.constant dense<0.5> : tensor<f32>
  %t = relay.constant dense<0.25> : tensor<f32>
  %z = relay.constant dense<-3> : tensor<i32>
  %0 = "relay.qnn.add"(%a, %b, %s, %z, %t, %z, %s, %z) : (tensor<2x8xi8>, tensor<8xi8>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i32>) -> tensor<2x8xi8>
  %1 = "relay.qnn.mul"(%0, %a, %s, %z, %s, %z, %t, %z) : (tensor<2x8xi8>, tensor<2x8xi8>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i32>) -> tensor<2x8xi8>
  %2 = "relay.qnn.global_avg_pool2d"(%i, %s, %z, %t, %z) : (tensor<1x8x4x4xi8>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i32>) -> tensor<1x8x1x1xi8>
  %3 = relay.nn.max_pool2d %i {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x8x4x4xi8>) -> tensor<1x8x2x2xi8>
  %4 = relay.reshape %3 {newshape = array<i64: 1, 32>} : (tensor<1x8x2x2xi8>) -> tensor<1x32xi8>
  func.return %1, %2, %4 : tensor<2x8xi8>, tensor<1x8x1x1xi8>, tensor<1x32xi8>
}
