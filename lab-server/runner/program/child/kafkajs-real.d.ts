// The bundler maps 'kafkajs-real' to the real kafkajs; the shim then takes the name 'kafkajs'.
declare module 'kafkajs-real' {
  export * from 'kafkajs';
}
