// Recall: the indexes search and retrieved context read. Content an Alternative,
// Summary or Introspection holds is embedded when it is bound to its Episode and gains the label
// `Embedded` (one vector index across the three kinds). The dimension is the embedder's (not
// fixed here: 384 for the default all-MiniLM-L6-v2, another for an OpenAI-compatible endpoint).
// Graphiti's own Entity name embeddings and RELATES_TO fact embeddings get vector indexes too
// (graphiti-core searches them by scanning). Full-text uses the English analyzer (stems, stop
// words), so a question's function words do not match every message.
CREATE VECTOR INDEX recall_embedding IF NOT EXISTS
FOR (n:Embedded) ON n.embedding
OPTIONS {indexConfig: {`vector.similarity_function`: 'cosine'}};
CREATE FULLTEXT INDEX recall_content IF NOT EXISTS
FOR (n:Alternative|Summary|Introspection) ON EACH [n.content]
OPTIONS {indexConfig: {`fulltext.analyzer`: 'english'}};
CREATE VECTOR INDEX entity_name_embedding IF NOT EXISTS
FOR (n:Entity) ON n.name_embedding
OPTIONS {indexConfig: {`vector.similarity_function`: 'cosine'}};
CREATE FULLTEXT INDEX entity_text IF NOT EXISTS
FOR (n:Entity) ON EACH [n.name, n.summary]
OPTIONS {indexConfig: {`fulltext.analyzer`: 'english'}};
CREATE VECTOR INDEX fact_embedding IF NOT EXISTS
FOR ()-[e:RELATES_TO]-() ON e.fact_embedding
OPTIONS {indexConfig: {`vector.similarity_function`: 'cosine'}};
CREATE FULLTEXT INDEX fact_text IF NOT EXISTS
FOR ()-[e:RELATES_TO]-() ON EACH [e.fact]
OPTIONS {indexConfig: {`fulltext.analyzer`: 'english'}}
