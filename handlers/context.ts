import type { FastifyReply, FastifyRequest } from 'fastify';
import type { components, operations } from '../codegen/openapi';
import type { DB } from '../db/connection';
import type { Config } from '../src/config';
import type { RenderPool } from '../src/pdf/render-pool';

/** What every handler may use: passed in once, so handlers stay testable and free of globals. */
export interface HandlerContext {
  readonly db: DB;
  readonly config: Config;
  readonly renderPool: RenderPool;
}

/*
 * The types of every operation, from the generated contract (codegen/openapi.ts): what a handler
 * receives (validated query, path parameters, body) and what it may answer in JSON. A contract change
 * that a handler does not follow fails to compile.
 */
export type OperationId = keyof operations;
type Operation<Id extends OperationId> = operations[Id];

/** `unknown` where the contract has nothing (a `never` or absent part). */
type Present<T> = [NonNullable<T>] extends [never] ? unknown : NonNullable<T>;

export type QueryOf<Id extends OperationId> = Present<Operation<Id>['parameters']['query']>;
export type ParamsOf<Id extends OperationId> = Present<Operation<Id>['parameters']['path']>;
export type BodyOf<Id extends OperationId> =
  Operation<Id> extends { requestBody: { content: { 'application/json': infer Body } } } ? Body : unknown;

/** The JSON bodies of an operation's successful answers (200 and 201). */
export type JsonAnswerOf<Id extends OperationId> = {
  [Status in keyof Operation<Id>['responses']]: Status extends 200 | 201
    ? Operation<Id>['responses'][Status] extends { content: { 'application/json': infer Json } }
      ? Json
      : never
    : never;
}[keyof Operation<Id>['responses']];

export type RequestOf<Id extends OperationId> = FastifyRequest<{ Querystring: QueryOf<Id>; Params: ParamsOf<Id>; Body: BodyOf<Id> }>;

/**
 * The handler of one operation: the contract's JSON answer, or the reply it has sent itself (a
 * CSV stream, a PDF, a status other than 200).
 */
export type OperationHandler<Id extends OperationId> = (
  request: RequestOf<Id>,
  reply: FastifyReply,
) => Promise<JsonAnswerOf<Id> | FastifyReply>;

/** The `meta` object of every envelope. */
export type Meta = components['schemas']['Meta'];
/** The query string every list resource and the summary share. */
export type ListQuery = QueryOf<'listUsers'>;
