// The bundler maps 'kafkajs-real' to the real kafkajs; the shim then takes the name 'kafkajs'.
declare module 'kafkajs-real' {
  export * from 'kafkajs';
}

/** kafkajs's table of protocol errors (not in its public types). */
declare module 'kafkajs/src/protocol/error.js' {
  export const errorCodes: { type: string; code: number; retriable: boolean; message: string }[];
}
