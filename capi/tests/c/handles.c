/* Handles as ints and back (MPI_*_toint / MPI_*_fromint) and the status
 * accessors (MPI_Status_get_* / MPI_Status_set_*), every value checked. */
#include "check.h"

int main(int argc, char **argv)
{
    int rank, size;
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    check_rank = rank;

    /* Predefined handles round-trip and stay distinct. */
    CHECK(MPI_Comm_fromint(MPI_Comm_toint(MPI_COMM_WORLD)) == MPI_COMM_WORLD);
    CHECK(MPI_Comm_fromint(MPI_Comm_toint(MPI_COMM_SELF)) == MPI_COMM_SELF);
    CHECK(MPI_Comm_toint(MPI_COMM_WORLD) != MPI_Comm_toint(MPI_COMM_SELF));
    CHECK(MPI_Type_fromint(MPI_Type_toint(MPI_DOUBLE)) == MPI_DOUBLE);
    CHECK(MPI_Op_fromint(MPI_Op_toint(MPI_SUM)) == MPI_SUM);
    CHECK(MPI_Request_fromint(MPI_Request_toint(MPI_REQUEST_NULL)) == MPI_REQUEST_NULL);
    CHECK(MPI_Errhandler_fromint(MPI_Errhandler_toint(MPI_ERRORS_RETURN)) == MPI_ERRORS_RETURN);
    CHECK(MPI_Group_fromint(MPI_Group_toint(MPI_GROUP_NULL)) == MPI_GROUP_NULL);
    CHECK(MPI_Info_fromint(MPI_Info_toint(MPI_INFO_NULL)) == MPI_INFO_NULL);
    CHECK(MPI_Message_fromint(MPI_Message_toint(MPI_MESSAGE_NULL)) == MPI_MESSAGE_NULL);
    CHECK(MPI_Win_fromint(MPI_Win_toint(MPI_WIN_NULL)) == MPI_WIN_NULL);
    CHECK(MPI_File_fromint(MPI_File_toint(MPI_FILE_NULL)) == MPI_FILE_NULL);
    CHECK(MPI_Session_fromint(MPI_Session_toint(MPI_SESSION_NULL)) == MPI_SESSION_NULL);

    /* A handle the library made: usable again after the round trip. */
    MPI_Comm dup;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    MPI_Comm back = MPI_Comm_fromint(MPI_Comm_toint(dup));
    CHECK(back == dup);
    int r2;
    OK(MPI_Comm_rank(back, &r2));
    CHECK(r2 == rank);
    OK(MPI_Comm_free(&back));

    /* A live request through an int. */
    int out = rank, in = -1;
    MPI_Request req;
    OK(MPI_Irecv(&in, 1, MPI_INT, 0, 7, MPI_COMM_SELF, &req));
    MPI_Request again = MPI_Request_fromint(MPI_Request_toint(req));
    OK(MPI_Send(&out, 1, MPI_INT, 0, 7, MPI_COMM_SELF));
    MPI_Status st;
    OK(MPI_Wait(&again, &st));
    CHECK(in == rank && again == MPI_REQUEST_NULL);

    /* Status accessors read what a receive reported. */
    int v = -9;
    OK(MPI_Status_get_source(&st, &v));
    CHECK(v == 0 && v == st.MPI_SOURCE);
    OK(MPI_Status_get_tag(&st, &v));
    CHECK(v == 7);
    OK(MPI_Status_set_source(&st, 5));
    OK(MPI_Status_set_tag(&st, 11));
    OK(MPI_Status_set_error(&st, MPI_ERR_TAG));
    CHECK(st.MPI_SOURCE == 5 && st.MPI_TAG == 11 && st.MPI_ERROR == MPI_ERR_TAG);
    OK(MPI_Status_get_error(&st, &v));
    CHECK(v == MPI_ERR_TAG);
    int count = -1;
    OK(MPI_Get_count(&st, MPI_INT, &count));
    CHECK(count == 1); /* setting the public fields keeps the count */

    OK(MPI_Finalize());
    return 0;
}
