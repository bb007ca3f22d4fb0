// RUN: byoc-opt %s -p byoc-fake-quantization-to-integer --split-input-file | filecheck %s

// A conv2d unit with a DQ'd int32 bias and a relu: qnn.conv2d, the int32 bias,
// requantize to the output's parameters (input scale x_scale * w_scale per
// channel), and the relu as a clip at the output zero point.

// CHECK-LABEL: func.func @conv
// CHECK:         %[[Q:.*]] = relay.qnn.quantize %x, %xs, %xz {out_dtype = "uint8"}
// CHECK-NEXT:    %[[ACC:.*]] = relay.qnn.conv2d %[[Q]], %w, %xz, %wz, %xs, %ws {padding = array<i64: 1, 1, 1, 1>, out_dtype = "int32"} : (tensor<1x2x4x4xui8>, tensor<2x2x3x3xi8>, tensor<i32>, tensor<2xi32>, tensor<f32>, tensor<2xf32>) -> tensor<1x2x4x4xi32>
// CHECK-NEXT:    %[[B:.*]] = relay.constant dense<[10, -20]> : tensor<2xi32>
// CHECK-NEXT:    %[[BIASED:.*]] = relay.nn.bias_add %[[ACC]], %[[B]] : (tensor<1x2x4x4xi32>, tensor<2xi32>) -> tensor<1x2x4x4xi32>
// CHECK-NEXT:    %[[IS:.*]] = relay.constant dense<[5.000000e-02, 2.500000e-02]> : tensor<2xf32>
// CHECK-NEXT:    %[[IZ:.*]] = relay.constant dense<0> : tensor<i32>
// CHECK-NEXT:    %[[R:.*]] = relay.qnn.requantize %[[BIASED]], %[[IS]], %[[IZ]], %ys, %yz {axis = 1 : i64, out_dtype = "uint8"} : (tensor<1x2x4x4xi32>, tensor<2xf32>, tensor<i32>, tensor<f32>, tensor<i32>) -> tensor<1x2x4x4xui8>
// CHECK-NEXT:    %[[C:.*]] = relay.clip %[[R]] {a_min = 1.000000e+01 : f64, a_max = 2.550000e+02 : f64} : (tensor<1x2x4x4xui8>) -> tensor<1x2x4x4xui8>
// CHECK-NEXT:    %[[OUT:.*]] = relay.qnn.dequantize %[[C]], %ys, %yz
// CHECK-NEXT:    func.return %[[OUT]]
// CHECK-NOT:     relay.nn.conv2d
func.func @conv(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %xs = relay.constant dense<0.5> : tensor<f32>
  %xz = relay.constant dense<128> : tensor<i32>
  %w = relay.constant dense<1> : tensor<2x2x3x3xi8>
  %ws = relay.constant dense<[0.1, 0.05]> : tensor<2xf32>
  %wz = relay.constant dense<0> : tensor<2xi32>
  %b = relay.constant dense<[10, -20]> : tensor<2xi32>
  %bs = relay.constant dense<[0.05, 0.025]> : tensor<2xf32>
  %bz = relay.constant dense<0> : tensor<2xi32>
  %ys = relay.constant dense<0.25> : tensor<f32>
  %yz = relay.constant dense<10> : tensor<i32>
  %q = relay.qnn.quantize %x, %xs, %xz {out_dtype = "uint8"} : (tensor<1x2x4x4xf32>, tensor<f32>, tensor<i32>) -> tensor<1x2x4x4xui8>
  %dx = relay.qnn.dequantize %q, %xs, %xz : (tensor<1x2x4x4xui8>, tensor<f32>, tensor<i32>) -> tensor<1x2x4x4xf32>
  %dw = relay.qnn.dequantize %w, %ws, %wz {axis = 0 : i64} : (tensor<2x2x3x3xi8>, tensor<2xf32>, tensor<2xi32>) -> tensor<2x2x3x3xf32>
  %db = relay.qnn.dequantize %b, %bs, %bz {axis = 0 : i64} : (tensor<2xi32>, tensor<2xf32>, tensor<2xi32>) -> tensor<2xf32>
  %c = relay.nn.conv2d %dx, %dw {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x4x4xf32>
  %cb = relay.nn.bias_add %c, %db : (tensor<1x2x4x4xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  %r = relay.nn.relu %cb : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %qy = relay.qnn.quantize %r, %ys, %yz {out_dtype = "uint8"} : (tensor<1x2x4x4xf32>, tensor<f32>, tensor<i32>) -> tensor<1x2x4x4xui8>
  %y = relay.qnn.dequantize %qy, %ys, %yz : (tensor<1x2x4x4xui8>, tensor<f32>, tensor<i32>) -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}

// -----

// MatMul by a [K, N] weight: qnn.dense with the weight transposed at compile
// time (its per-column parameters become per-row). A QDQ add, a max pool with
// the same parameters (no requantize) and a Q(DQ(x)) with new parameters.

// CHECK-LABEL: func.func @matmul
// CHECK:         %[[Q:.*]] = relay.qnn.quantize %x, %s, %z :
// CHECK:         %[[WT:.*]] = relay.constant dense<{{\[\[}}1, 3], [2, 4]]> : tensor<2x2xi8>
// CHECK-NEXT:    %[[ACC:.*]] = relay.qnn.dense %[[Q]], %[[WT]], %z, %wz, %s, %ws {out_dtype = "int32"} : (tensor<3x2xi8>, tensor<2x2xi8>, tensor<i32>, tensor<2xi32>, tensor<f32>, tensor<2xf32>) -> tensor<3x2xi32>
// CHECK:         %[[M:.*]] = relay.qnn.requantize %[[ACC]], %{{.*}}, %{{.*}}, %s, %z {axis = 1 : i64, out_dtype = "int8"}
// CHECK-NEXT:    %[[A:.*]] = relay.qnn.add %[[M]], %[[Q]], %s, %z, %s, %z, %t, %z : (tensor<3x2xi8>, tensor<3x2xi8>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i32>) -> tensor<3x2xi8>
// CHECK-NEXT:    %[[R:.*]] = relay.qnn.requantize %[[A]], %t, %z, %s, %z {out_dtype = "int8"}
// CHECK-NEXT:    %[[OUT:.*]] = relay.qnn.dequantize %[[R]], %s, %z
// CHECK-NEXT:    func.return %[[OUT]]
func.func @matmul(%x: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %s = relay.constant dense<0.5> : tensor<f32>
  %t = relay.constant dense<0.75> : tensor<f32>
  %z = relay.constant dense<-1> : tensor<i32>
  %w = relay.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi8>
  %ws = relay.constant dense<[0.1, 0.2]> : tensor<2xf32>
  %wz = relay.constant dense<0> : tensor<2xi32>
  %q = relay.qnn.quantize %x, %s, %z : (tensor<3x2xf32>, tensor<f32>, tensor<i32>) -> tensor<3x2xi8>
  %dx = relay.qnn.dequantize %q, %s, %z : (tensor<3x2xi8>, tensor<f32>, tensor<i32>) -> tensor<3x2xf32>
  %dw = relay.qnn.dequantize %w, %ws, %wz {axis = 1 : i64} : (tensor<2x2xi8>, tensor<2xf32>, tensor<2xi32>) -> tensor<2x2xf32>
  %m = relay.nn.matmul %dx, %dw : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  %qm = relay.qnn.quantize %m, %s, %z : (tensor<3x2xf32>, tensor<f32>, tensor<i32>) -> tensor<3x2xi8>
  %dm = relay.qnn.dequantize %qm, %s, %z : (tensor<3x2xi8>, tensor<f32>, tensor<i32>) -> tensor<3x2xf32>
  %a = relay.add %dm, %dx : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  %qa = relay.qnn.quantize %a, %t, %z : (tensor<3x2xf32>, tensor<f32>, tensor<i32>) -> tensor<3x2xi8>
  %da = relay.qnn.dequantize %qa, %t, %z : (tensor<3x2xi8>, tensor<f32>, tensor<i32>) -> tensor<3x2xf32>
  %qb = relay.qnn.quantize %da, %s, %z : (tensor<3x2xf32>, tensor<f32>, tensor<i32>) -> tensor<3x2xi8>
  %y = relay.qnn.dequantize %qb, %s, %z : (tensor<3x2xi8>, tensor<f32>, tensor<i32>) -> tensor<3x2xf32>
  func.return %y : tensor<3x2xf32>
}

// -----

// Pooling, flatten and concatenate on the integers; an input with other
// parameters is requantized to the output's first.

// CHECK-LABEL: func.func @moves
// CHECK:         %[[Q:.*]] = relay.qnn.quantize %x, %s, %z {out_dtype = "uint8"}
// CHECK-NEXT:    %[[P:.*]] = relay.nn.max_pool2d %[[Q]] {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x2x4x4xui8>) -> tensor<1x2x2x2xui8>
// CHECK-NEXT:    %[[F:.*]] = relay.nn.batch_flatten %[[P]] : (tensor<1x2x2x2xui8>) -> tensor<1x8xui8>
// CHECK-NEXT:    %[[G:.*]] = relay.qnn.global_avg_pool2d %[[Q]], %s, %z, %t, %z : (tensor<1x2x4x4xui8>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i32>) -> tensor<1x2x1x1xui8>
// CHECK-NEXT:    %[[GF:.*]] = relay.reshape %[[G]] {newshape = array<i64: 1, 2>} : (tensor<1x2x1x1xui8>) -> tensor<1x2xui8>
// CHECK-NEXT:    %[[RG:.*]] = relay.qnn.requantize %[[GF]], %t, %z, %s, %z {out_dtype = "uint8"}
// CHECK-NEXT:    %[[C:.*]] = relay.concatenate %[[F]], %[[RG]] {axis = 1 : i64} : (tensor<1x8xui8>, tensor<1x2xui8>) -> tensor<1x10xui8>
func.func @moves(%x: tensor<1x2x4x4xf32>) -> tensor<1x10xf32> {
  %s = relay.constant dense<0.5> : tensor<f32>
  %t = relay.constant dense<0.25> : tensor<f32>
  %z = relay.constant dense<7> : tensor<i32>
  %q = relay.qnn.quantize %x, %s, %z {out_dtype = "uint8"} : (tensor<1x2x4x4xf32>, tensor<f32>, tensor<i32>) -> tensor<1x2x4x4xui8>
  %d = relay.qnn.dequantize %q, %s, %z : (tensor<1x2x4x4xui8>, tensor<f32>, tensor<i32>) -> tensor<1x2x4x4xf32>
  %p = relay.nn.max_pool2d %d {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  %qp = relay.qnn.quantize %p, %s, %z {out_dtype = "uint8"} : (tensor<1x2x2x2xf32>, tensor<f32>, tensor<i32>) -> tensor<1x2x2x2xui8>
  %dp = relay.qnn.dequantize %qp, %s, %z : (tensor<1x2x2x2xui8>, tensor<f32>, tensor<i32>) -> tensor<1x2x2x2xf32>
  %f = relay.nn.batch_flatten %dp : (tensor<1x2x2x2xf32>) -> tensor<1x8xf32>
  %qf = relay.qnn.quantize %f, %s, %z {out_dtype = "uint8"} : (tensor<1x8xf32>, tensor<f32>, tensor<i32>) -> tensor<1x8xui8>
  %df = relay.qnn.dequantize %qf, %s, %z : (tensor<1x8xui8>, tensor<f32>, tensor<i32>) -> tensor<1x8xf32>
  %g = relay.nn.global_avg_pool2d %d : (tensor<1x2x4x4xf32>) -> tensor<1x2x1x1xf32>
  %qg = relay.qnn.quantize %g, %t, %z {out_dtype = "uint8"} : (tensor<1x2x1x1xf32>, tensor<f32>, tensor<i32>) -> tensor<1x2x1x1xui8>
  %dg = relay.qnn.dequantize %qg, %t, %z : (tensor<1x2x1x1xui8>, tensor<f32>, tensor<i32>) -> tensor<1x2x1x1xf32>
  %gf = relay.reshape %dg {newshape = array<i64: 1, 2>} : (tensor<1x2x1x1xf32>) -> tensor<1x2xf32>
  %qgf = relay.qnn.quantize %gf, %t, %z {out_dtype = "uint8"} : (tensor<1x2xf32>, tensor<f32>, tensor<i32>) -> tensor<1x2xui8>
  %dgf = relay.qnn.dequantize %qgf, %t, %z : (tensor<1x2xui8>, tensor<f32>, tensor<i32>) -> tensor<1x2xf32>
  %c = relay.concatenate %df, %dgf {axis = 1 : i64} : (tensor<1x8xf32>, tensor<1x2xf32>) -> tensor<1x10xf32>
  %qc = relay.qnn.quantize %c, %s, %z {out_dtype = "uint8"} : (tensor<1x10xf32>, tensor<f32>, tensor<i32>) -> tensor<1x10xui8>
  %y = relay.qnn.dequantize %qc, %s, %z : (tensor<1x10xui8>, tensor<f32>, tensor<i32>) -> tensor<1x10xf32>
  func.return %y : tensor<1x10xf32>
}

// -----

// A group with no integer form stays in float between DQ and Q, each float op
// saying why; a DQ'd constant only float ops read becomes a float constant.

// CHECK-LABEL: func.func @kept_float
// CHECK:         %[[D:.*]] = relay.qnn.dequantize %{{.*}}, %s, %z
// CHECK-NEXT:    %[[E:.*]] = relay.exp %[[D]] {byoc.float_unit = "its result is not quantized"}
// CHECK-NEXT:    %[[G:.*]] = relay.constant dense<[5.000000e-01, 1.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %[[N:.*]] = relay.nn.layer_norm %[[E]], %[[G]], %beta {byoc.float_unit = "relay.nn.layer_norm has no quantized form"}
// CHECK:         %[[S:.*]] = relay.sigmoid %[[D]] {byoc.float_unit = "relay.sigmoid has no quantized form"}
// CHECK-NOT:     byoc.float_unit
func.func @kept_float(%x: tensor<3x2xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>) {
  %s = relay.constant dense<0.5> : tensor<f32>
  %z = relay.constant dense<0> : tensor<i32>
  %g = relay.constant dense<[1, 2]> : tensor<2xi8>
  %beta = relay.constant dense<0.0> : tensor<2xf32>
  %q = relay.qnn.quantize %x, %s, %z : (tensor<3x2xf32>, tensor<f32>, tensor<i32>) -> tensor<3x2xi8>
  %d = relay.qnn.dequantize %q, %s, %z : (tensor<3x2xi8>, tensor<f32>, tensor<i32>) -> tensor<3x2xf32>
  %e = relay.exp %d : (tensor<3x2xf32>) -> tensor<3x2xf32>
  %dg = relay.qnn.dequantize %g, %s, %z : (tensor<2xi8>, tensor<f32>, tensor<i32>) -> tensor<2xf32>
  %n = relay.nn.layer_norm %e, %dg, %beta : (tensor<3x2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  %qn = relay.qnn.quantize %n, %s, %z : (tensor<3x2xf32>, tensor<f32>, tensor<i32>) -> tensor<3x2xi8>
  %dn = relay.qnn.dequantize %qn, %s, %z : (tensor<3x2xi8>, tensor<f32>, tensor<i32>) -> tensor<3x2xf32>
  %sg = relay.sigmoid %d : (tensor<3x2xf32>) -> tensor<3x2xf32>
  %qs = relay.qnn.quantize %sg, %s, %z : (tensor<3x2xf32>, tensor<f32>, tensor<i32>) -> tensor<3x2xi8>
  %ds = relay.qnn.dequantize %qs, %s, %z : (tensor<3x2xi8>, tensor<f32>, tensor<i32>) -> tensor<3x2xf32>
  func.return %dn, %ds : tensor<3x2xf32>, tensor<3x2xf32>
}

// -----

// A16W8: a dense unit whose data and output are int16 stays float (the integer
// products take 8-bit data), saying why; Q(DQ(x)) between two 16-bit
// quantizations is still a requantize.

// CHECK-LABEL: func.func @sixteen_bit
// CHECK:         %[[D:.*]] = relay.qnn.dequantize %q, %s, %z : (tensor<3x4xi16>, tensor<f32>, tensor<i32>) -> tensor<3x4xf32>
// CHECK:         relay.nn.dense %[[D]], %{{.*}} {byoc.float_unit = "its output is int16; integer ops take 8-bit data"}
// CHECK:         relay.qnn.requantize %q, %s, %z, %s2, %z {out_dtype = "int16"} : (tensor<3x4xi16>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<i32>) -> tensor<3x4xi16>
// CHECK-NOT:     relay.qnn.dense
func.func @sixteen_bit(%q: tensor<3x4xi16>) -> (tensor<3x2xf32>, tensor<3x4xf32>) {
  %s = relay.constant dense<0.5> : tensor<f32>
  %s2 = relay.constant dense<0.25> : tensor<f32>
  %z = relay.constant dense<0> : tensor<i32>
  %w = relay.constant dense<[[1, 2, 3, 4], [-1, -2, -3, -4]]> : tensor<2x4xi8>
  %d = relay.qnn.dequantize %q, %s, %z : (tensor<3x4xi16>, tensor<f32>, tensor<i32>) -> tensor<3x4xf32>
  %dw = relay.qnn.dequantize %w, %s, %z : (tensor<2x4xi8>, tensor<f32>, tensor<i32>) -> tensor<2x4xf32>
  %m = relay.nn.dense %d, %dw : (tensor<3x4xf32>, tensor<2x4xf32>) -> tensor<3x2xf32>
  %qm = relay.qnn.quantize %m, %s, %z {out_dtype = "int16"} : (tensor<3x2xf32>, tensor<f32>, tensor<i32>) -> tensor<3x2xi16>
  %dm = relay.qnn.dequantize %qm, %s, %z : (tensor<3x2xi16>, tensor<f32>, tensor<i32>) -> tensor<3x2xf32>
  %r = relay.qnn.quantize %d, %s2, %z {out_dtype = "int16"} : (tensor<3x4xf32>, tensor<f32>, tensor<i32>) -> tensor<3x4xi16>
  %dr = relay.qnn.dequantize %r, %s2, %z : (tensor<3x4xi16>, tensor<f32>, tensor<i32>) -> tensor<3x4xf32>
  func.return %dm, %dr : tensor<3x2xf32>, tensor<3x4xf32>
}
