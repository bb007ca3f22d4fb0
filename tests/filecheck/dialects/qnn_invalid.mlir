// RUN: byoc-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

// Bad quantization parameters and types: one message naming the op and the operand.

func.func @main(%x: tensor<2x8xf32>) -> tensor<2x8xi8> {
  %s = relay.constant dense<0.0> : tensor<f32>
  %z = relay.constant dense<0> : tensor<i32>
  %0 = relay.qnn.quantize %x, %s, %z : (tensor<2x8xf32>, tensor<f32>, tensor<i32>) -> tensor<2x8xi8>
  func.return %0 : tensor<2x8xi8>
}
// CHECK: qnn_invalid.mlir:8:3: error: 'relay.qnn.quantize': output_scale must be positive and finite, got 0

// -----

func.func @main(%x: tensor<2x8xf32>) -> tensor<2x8xui8> {
  %s = relay.constant dense<0.5> : tensor<f32>
  %z = relay.constant dense<300> : tensor<i32>
  %0 = relay.qnn.quantize %x, %s, %z {out_dtype = "uint8"} : (tensor<2x8xf32>, tensor<f32>, tensor<i32>) -> tensor<2x8xui8>
  func.return %0 : tensor<2x8xui8>
}
// CHECK: qnn_invalid.mlir:18:3: error: 'relay.qnn.quantize': output_zero_point 300 is out of the range of uint8 [0, 255]

// -----

func.func @main(%x: tensor<2x8xi8>) -> tensor<2x8xf32> {
  %s = relay.constant dense<[0.5, 0.25, 0.125]> : tensor<3xf32>
  %z = relay.constant dense<0> : tensor<i32>
  %0 = relay.qnn.dequantize %x, %s, %z {axis = 1 : i64} : (tensor<2x8xi8>, tensor<3xf32>, tensor<i32>) -> tensor<2x8xf32>
  func.return %0 : tensor<2x8xf32>
}
// CHECK: qnn_invalid.mlir:28:3: error: 'relay.qnn.dequantize': input_scale has 3 values but the data has 8 channels (along axis 1)

// -----

func.func @main(%x: tensor<2x8xi8>, %s: tensor<f32>, %z: tensor<i32>) -> tensor<2x8xi8> {
  %n = relay.constant dense<[0.5, 0.25, -0.125, 1.0, 1.0, 1.0, 1.0, 1.0]> : tensor<8xf32>
  %0 = relay.qnn.requantize %x, %s, %z, %n, %z {axis = 1 : i64} : (tensor<2x8xi8>, tensor<f32>, tensor<i32>, tensor<8xf32>, tensor<i32>) -> tensor<2x8xi8>
  func.return %0 : tensor<2x8xi8>
}
// CHECK: qnn_invalid.mlir:37:3: error: 'relay.qnn.requantize': output_scale must be positive and finite, got -0.125 (channel 2)

// -----

func.func @main(%x: tensor<2x8xi8>, %s: tensor<f32>, %z: tensor<i32>) -> tensor<2x8xi8> {
  %0 = relay.qnn.quantize %x, %s, %z : (tensor<2x8xi8>, tensor<f32>, tensor<i32>) -> tensor<2x8xi8>
  func.return %0 : tensor<2x8xi8>
}
// CHECK: qnn_invalid.mlir:45:3: error: 'relay.qnn.quantize': data must have element type f32, got i8

// -----

func.func @main(%x: tensor<2x8xf32>, %s: tensor<f32>, %z: tensor<i32>) -> tensor<2x8xi8> {
  %0 = relay.qnn.quantize %x, %s, %z {out_dtype = "uint8"} : (tensor<2x8xf32>, tensor<f32>, tensor<i32>) -> tensor<2x8xi8>
  func.return %0 : tensor<2x8xi8>
}
// CHECK: qnn_invalid.mlir:53:3: error: 'relay.qnn.quantize': result type tensor<2x8xi8> does not match the inferred type tensor<2x8xui8>

// -----

func.func @main(%x: tensor<2x8xf32>, %s: tensor<f32>, %z: tensor<i32>) -> tensor<2x8xi8> {
  %0 = relay.qnn.quantize %x, %s, %z {out_dtype = "int4"} : (tensor<2x8xf32>, tensor<f32>, tensor<i32>) -> tensor<2x8xi8>
  func.return %0 : tensor<2x8xi8>
}
// CHECK: qnn_invalid.mlir:61:3: error: 'relay.qnn.quantize': out_dtype "int4" is not one of "int8", "uint8", "int16", "uint16", "int32"

// -----

func.func @main(%x: tensor<1x4x6x6xui8>, %w: tensor<8x4x3x3xi8>, %s: tensor<f32>, %z: tensor<i32>, %ws: tensor<4xf32>) -> tensor<1x8x4x4xi32> {
  %0 = relay.qnn.conv2d %x, %w, %z, %z, %s, %ws : (tensor<1x4x6x6xui8>, tensor<8x4x3x3xi8>, tensor<i32>, tensor<i32>, tensor<f32>, tensor<4xf32>) -> tensor<1x8x4x4xi32>
  func.return %0 : tensor<1x8x4x4xi32>
}
// CHECK: qnn_invalid.mlir:69:3: error: 'relay.qnn.conv2d': kernel_scale has 4 values but the data has 8 channels (output channels)

// -----

func.func @main(%x: tensor<1x4x6x6xui8>, %w: tensor<8x4x3x3xi8>, %s: tensor<f32>, %zs: tensor<4xi32>) -> tensor<1x8x4x4xi32> {
  %0 = relay.qnn.conv2d %x, %w, %zs, %zs, %s, %s : (tensor<1x4x6x6xui8>, tensor<8x4x3x3xi8>, tensor<4xi32>, tensor<4xi32>, tensor<f32>, tensor<f32>) -> tensor<1x8x4x4xi32>
  func.return %0 : tensor<1x8x4x4xi32>
}
// CHECK: qnn_invalid.mlir:77:3: error: 'relay.qnn.conv2d': input_zero_point must be per-tensor (one value), got shape [4]

// -----

func.func @main(%a: tensor<2x8xi8>, %b: tensor<2x8xui8>, %s: tensor<f32>, %z: tensor<i32>) -> tensor<2x8xi8> {
  %0 = relay.qnn.add %a, %b, %s, %z, %s, %z, %s, %z : (tensor<2x8xi8>, tensor<2x8xui8>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i32>) -> tensor<2x8xi8>
  func.return %0 : tensor<2x8xi8>
}
// CHECK: qnn_invalid.mlir:85:3: error: 'relay.qnn.add': lhs and rhs have different element types i8 and ui8

// -----

func.func @main(%x: tensor<4x16xui8>, %w: tensor<8x16xi8>, %s: tensor<f32>) -> tensor<4x8xi32> {
  %z = relay.constant dense<-129> : tensor<i32>
  %0 = relay.qnn.dense %x, %w, %s, %z, %s, %s : (tensor<4x16xui8>, tensor<8x16xi8>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<f32>) -> tensor<4x8xi32>
  func.return %0 : tensor<4x8xi32>
}
// CHECK: qnn_invalid.mlir:94:3: error: 'relay.qnn.dense': input_zero_point must have a quantized element type (i8, ui8, i16, ui16, i32), got f32

// -----

func.func @main(%x: tensor<4x16xui8>, %w: tensor<8x16xi8>, %s: tensor<f32>, %zx: tensor<i32>) -> tensor<4x8xi32> {
  %z = relay.constant dense<-129> : tensor<i32>
  %0 = relay.qnn.dense %x, %w, %zx, %z, %s, %s : (tensor<4x16xui8>, tensor<8x16xi8>, tensor<i32>, tensor<i32>, tensor<f32>, tensor<f32>) -> tensor<4x8xi32>
  func.return %0 : tensor<4x8xi32>
}
// CHECK: qnn_invalid.mlir:103:3: error: 'relay.qnn.dense': kernel_zero_point -129 is out of the range of int8 [-128, 127]

// -----

func.func @main(%x: tensor<2x8xf32>) -> tensor<2x8xui16> {
  %s = relay.constant dense<0.5> : tensor<f32>
  %z = relay.constant dense<65536> : tensor<i32>
  %0 = relay.qnn.quantize %x, %s, %z {out_dtype = "uint16"} : (tensor<2x8xf32>, tensor<f32>, tensor<i32>) -> tensor<2x8xui16>
  func.return %0 : tensor<2x8xui16>
}
// CHECK: qnn_invalid.mlir:113:3: error: 'relay.qnn.quantize': output_zero_point 65536 is out of the range of uint16 [0, 65535]

// -----

// The integer products take 8-bit data only: 16-bit activations stay float.
func.func @main(%x: tensor<1x4x6x6xi16>, %w: tensor<8x4x3x3xi8>) -> tensor<1x8x4x4xi32> {
  %s = relay.constant dense<0.5> : tensor<f32>
  %z = relay.constant dense<0> : tensor<i32>
  %0 = relay.qnn.conv2d %x, %w, %z, %z, %s, %s : (tensor<1x4x6x6xi16>, tensor<8x4x3x3xi8>, tensor<i32>, tensor<i32>, tensor<f32>, tensor<f32>) -> tensor<1x8x4x4xi32>
  func.return %0 : tensor<1x8x4x4xi32>
}
// CHECK: qnn_invalid.mlir:124:3: error: 'relay.qnn.conv2d': data must have a quantized element type
